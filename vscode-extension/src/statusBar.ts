import * as vscode from 'vscode';
import { summarize } from './evidenceStatus';
import { EvidenceReport } from './protocol';

/** EvidenceStatus is the status-bar item: the evidence state, click to run evidence. */
export class EvidenceStatus implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;

  /** whether the item shows an evidence state (not "starting" nor "off") */
  showsEvidence = false;

  constructor() {
    this.item = vscode.window.createStatusBarItem('bcode.evidence', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'bcode evidence';
    // The extension starts bcode-ls as soon as it is active: "starting"
    // until the server answers, never "server off" in between.
    this.starting();
    this.item.show();
  }

  show(r: EvidenceReport | undefined): void {
    const s = summarize(r);
    this.showsEvidence = true;
    this.item.command = 'bcode.runEvidence';
    this.item.text = s.text;
    this.item.tooltip = s.tooltip;
    this.item.backgroundColor = s.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  starting(): void {
    this.showsEvidence = false;
    this.item.command = undefined;
    this.item.text = '$(sync~spin) bcode: starting…';
    this.item.tooltip = 'bcode-ls is starting';
    this.item.backgroundColor = undefined;
  }

  /** unavailable: the server is off; a click restarts it. */
  unavailable(why: string): void {
    this.showsEvidence = false;
    this.item.command = 'bcode.restartServer';
    this.item.text = '$(error) bcode: server off';
    this.item.tooltip = `${why}\n\nClick to restart bcode-ls.`;
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
  }

  dispose(): void { this.item.dispose(); }
}
