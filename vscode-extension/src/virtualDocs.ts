// Read-only virtual documents the extension serves itself: a file at a git
// revision (the two sides of a task's diff) and a task's event log. Packs
// and mutant diffs (bcode-pack:, bcode-mutant:) come from bcode-ls through
// vscode-languageclient's workspace/textDocumentContent feature.
import * as vscode from 'vscode';
import { BcodeApi } from './api';
import { show } from './git';
import { TaskDetail } from './protocol';

export const gitScheme = 'bcode-git';
export const eventsScheme = 'bcode-task';

/** gitUri names a file at a revision of a repository. */
export function gitUri(repo: string, rev: string, path: string): vscode.Uri {
  return vscode.Uri.from({ scheme: gitScheme, path: '/' + path, query: JSON.stringify({ repo, rev }) });
}

export class GitContentProvider implements vscode.TextDocumentContentProvider {
  provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const { repo, rev } = JSON.parse(uri.query) as { repo: string; rev: string };
    return show(repo, rev, uri.path.replace(/^\//, ''));
  }
}

/** eventsUri names the event log of a task. */
export function eventsUri(id: string): vscode.Uri {
  return vscode.Uri.from({ scheme: eventsScheme, path: `/${id}/events.log` });
}

/** renderEvents is a task's detail as the text of its events document. */
export function renderEvents(d: TaskDetail): string {
  const t = d.task;
  const lines = [
    `task ${t.id}: ${t.goal}`,
    `status ${t.status}${t.verdict ? `, verdict ${t.verdict}` : ''}${t.reason ? ` — ${t.reason}` : ''}`,
    `branch ${t.branch} from base ${t.base}`,
    `attempts: ${d.attempts.length}${d.verification ? `; last check ${d.verification.verdict} (${d.verification.base.slice(0, 7)}..${d.verification.head.slice(0, 7)})` : ''}`,
    '',
    'events:',
  ];
  for (const e of d.events) {
    const data = e.data === undefined || e.data === null ? '' : ' ' + JSON.stringify(e.data);
    lines.push(`#${e.seq}  ${e.at}  ${e.attempt ? `attempt ${e.attempt}  ` : ''}${e.kind}${data}`);
  }
  if (d.events.length === 0) lines.push('(none)');
  return lines.join('\n') + '\n';
}

export class EventsProvider implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  constructor(private readonly api: () => BcodeApi | undefined) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const id = uri.path.split('/')[1];
    const api = this.api();
    if (!api) return 'bcode-ls is not running: see the bcode output channel.\n';
    return renderEvents(await api.task(id));
  }

  /** refresh re-reads an open events document after its task changed. */
  refresh(id: string): void { this.changed.fire(eventsUri(id)); }
}
