import * as vscode from 'vscode';
import { summarize } from './evidenceStatus';
import { EvidenceReport } from './protocol';

/** EvidenceStatus is the status-bar item: the evidence state, click to run evidence. */
export class EvidenceStatus implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem('bcode.evidence', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'bcode evidence';
    this.item.command = 'bcode.runEvidence';
    this.show(undefined);
    this.item.show();
  }

  show(r: EvidenceReport | undefined): void {
    const s = summarize(r);
    this.item.text = s.text;
    this.item.tooltip = s.tooltip;
    this.item.backgroundColor = s.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  unavailable(why: string): void {
    this.item.text = '$(error) bcode: server off';
    this.item.tooltip = why;
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
  }

  dispose(): void { this.item.dispose(); }
}
