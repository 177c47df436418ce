// Read-only virtual documents the extension serves itself: the two sides
// of a task's diff (from bcode/taskDiff, so no git runs in the extension)
// and a task's event log. Packs and mutant diffs (bcode-pack:,
// bcode-mutant:) come from bcode-ls through vscode-languageclient's
// workspace/textDocumentContent feature.
import * as vscode from 'vscode';
import { BcodeApi } from './api';
import { Side, sideText, TaskDiffs } from './taskDiffs';
import { TaskDetail } from './protocol';
import { checkTable } from './checkReport';

export const taskDiffScheme = 'bcode-taskdiff';
export const eventsScheme = 'bcode-task';

/**
 * taskDiffUri names one side of a changed file of a task. The file's own
 * path ends the URI, so the editor picks the language from its name.
 */
export function taskDiffUri(id: string, side: Side, path: string): vscode.Uri {
  return vscode.Uri.from({ scheme: taskDiffScheme, path: `/${id}/${side}/${path}` });
}

/** parseTaskDiffUri undoes taskDiffUri. */
export function parseTaskDiffUri(uri: vscode.Uri): { id: string; side: Side; path: string } {
  const m = /^\/([^/]+)\/(base|head)\/(.+)$/.exec(uri.path);
  if (!m) throw new Error(`not a task diff URI: ${uri.toString()}`);
  return { id: m[1], side: m[2] as Side, path: m[3] };
}

export class TaskDiffProvider implements vscode.TextDocumentContentProvider {
  constructor(private readonly diffs: TaskDiffs) {}
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const { id, side, path } = parseTaskDiffUri(uri);
    return sideText(await this.diffs.file(id, path), side);
  }
}

/** eventsUri names the event log of a task. */
export function eventsUri(id: string): vscode.Uri {
  return vscode.Uri.from({ scheme: eventsScheme, path: `/${id}/events.log` });
}

/** renderEvents is a task's detail as the text of its events document. */
export function renderEvents(d: TaskDetail): string {
  const t = d.task;
  const lines: string[] = [
    `task ${t.id}: ${t.goal}`,
    `status ${t.status}${t.verdict ? `, verdict ${t.verdict}` : ''}${t.reason ? ` — ${t.reason}` : ''}`,
    `branch ${t.branch} from base ${t.base}`,
    `attempts: ${d.attempts.length}${d.verification ? `; last check ${d.verification.verdict} (${d.verification.base.slice(0, 7)}..${d.verification.head.slice(0, 7)})` : ''}`,
  ];
  if (d.verification) lines.push('', ...checkTable(d.verification.verdict, d.verification.report));
  lines.push('', 'events:');
  if (d.eventsOmitted) lines.push(`(${d.eventsOmitted} older events not shown)`);
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
