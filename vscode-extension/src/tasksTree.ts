// The Tasks view: every task of the workspace with its status, verdict and
// last event, live through bcode/taskChanged; under each task its changed
// files as bcode-ls reads them (bcode/taskDiff; each opens VS Code's diff
// editor) and its events.
import * as vscode from 'vscode';
import { BcodeApi } from './api';
import { FileDiff, TaskChanged, TaskDetail, TaskDiffResult, TaskSummary } from './protocol';
import { TaskDiffs } from './taskDiffs';
import { applyChanged, describe } from './tasksModel';
import { checkRows, checkSummary, CheckRow, oracleText } from './checkReport';

export type Node =
  | { kind: 'task'; task: TaskSummary }
  | { kind: 'files'; task: TaskSummary }
  | { kind: 'file'; task: TaskSummary; diff: TaskDiffResult; file: FileDiff }
  | { kind: 'events'; task: TaskSummary }
  | { kind: 'event'; task: TaskSummary; seq: number; label: string; description: string }
  | { kind: 'reason'; task: TaskSummary; text: string }
  | { kind: 'check'; task: TaskSummary; detail: TaskDetail }
  | { kind: 'checkRow'; task: TaskSummary; row: CheckRow; n: number }
  | { kind: 'message'; text: string; tooltip?: string };

const fileStatus: Record<string, string> = { A: 'added', M: 'modified', D: 'deleted', T: 'type changed' };

export class TasksTree implements vscode.TreeDataProvider<Node> {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private tasks: TaskSummary[] = [];
  private details = new Map<string, TaskDetail>();
  private problem: string | undefined;
  /** the tasks' changes, shared with the diff editor's documents */
  readonly diffs = new TaskDiffs(() => this.api);

  constructor(private api: BcodeApi | undefined, private readonly now: () => Date = () => new Date()) {}

  /** setApi connects the view to a (re)started server. */
  setApi(api: BcodeApi | undefined, problem?: string): void {
    this.api = api;
    this.problem = problem;
    this.refresh();
  }

  refresh(): void {
    this.details.clear();
    this.diffs.forget();
    this.changed.fire(undefined);
  }

  /** taskChanged applies a bcode/taskChanged notification. */
  taskChanged(c: TaskChanged): void {
    this.details.delete(c.id);
    this.diffs.forget(c.id);
    if (!applyChanged(this.tasks, c, this.now())) {
      this.refresh(); // a task this view has not seen: list again
      return;
    }
    this.changed.fire(undefined);
  }

  task(id: string): TaskSummary | undefined { return this.tasks.find((t) => t.id === id); }

  async detail(id: string): Promise<TaskDetail> {
    const cached = this.details.get(id);
    if (cached) return cached;
    if (!this.api) throw new Error(this.problem ?? 'bcode-ls is not running');
    const d = await this.api.task(id);
    this.details.set(id, d);
    return d;
  }

  getTreeItem(n: Node): vscode.TreeItem {
    switch (n.kind) {
      case 'task': {
        const row = describe(n.task, this.now());
        const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.Collapsed);
        item.id = 'task:' + n.task.id;
        item.description = row.description;
        item.tooltip = new vscode.MarkdownString(row.tooltip);
        item.contextValue = row.contextValue;
        item.iconPath = new vscode.ThemeIcon(row.icon.id, row.icon.color ? new vscode.ThemeColor(row.icon.color) : undefined);
        // A click expands the row (its reason, changes and events) and
        // does nothing else: opening every diff is "Open Task Diff" in the
        // row's menu, one file's diff is a click on that file.
        return item;
      }
      case 'reason': {
        const item = new vscode.TreeItem(`Why: ${n.text}`, vscode.TreeItemCollapsibleState.None);
        item.id = 'reason:' + n.task.id;
        item.tooltip = n.text;
        item.iconPath = new vscode.ThemeIcon(n.task.status === 'failed' ? 'error' : 'warning',
          new vscode.ThemeColor(n.task.status === 'failed' ? 'testing.iconFailed' : 'list.warningForeground'));
        return item;
      }
      case 'check': {
        const v = n.detail.verification!;
        const s = checkSummary(v.verdict, v.report);
        // Expanded: the test table and the findings are why the task
        // ended as it did, for every verdict.
        const item = new vscode.TreeItem(s.label, vscode.TreeItemCollapsibleState.Expanded);
        item.id = 'check:' + n.task.id;
        item.description = s.description;
        item.tooltip = `${s.label} (${v.base.slice(0, 7)}..${v.head.slice(0, 7)})`;
        const bad = v.verdict === 'tampered' || v.verdict === 'failed' || v.verdict === 'error';
        item.iconPath = new vscode.ThemeIcon(v.verdict === 'verified' ? 'pass' : bad ? 'shield' : 'beaker',
          new vscode.ThemeColor(v.verdict === 'verified' ? 'testing.iconPassed' : bad ? 'testing.iconFailed' : 'list.warningForeground'));
        return item;
      }
      case 'checkRow': {
        const item = new vscode.TreeItem(n.row.label, vscode.TreeItemCollapsibleState.None);
        item.id = `check:${n.task.id}:${n.n}`;
        item.description = n.row.description;
        item.tooltip = n.row.tooltip || n.row.label;
        item.iconPath = new vscode.ThemeIcon(n.row.icon.id, n.row.icon.color ? new vscode.ThemeColor(n.row.icon.color) : undefined);
        return item;
      }
      case 'files': {
        const item = new vscode.TreeItem('Changes', vscode.TreeItemCollapsibleState.Expanded);
        item.id = 'files:' + n.task.id;
        item.iconPath = new vscode.ThemeIcon('git-compare');
        return item;
      }
      case 'file': {
        const item = new vscode.TreeItem(n.file.path.split('/').pop() ?? n.file.path, vscode.TreeItemCollapsibleState.None);
        item.id = `file:${n.task.id}:${n.file.path}`;
        const dir = n.file.path.includes('/') ? n.file.path.slice(0, n.file.path.lastIndexOf('/')) + ' · ' : '';
        const what = n.file.omitted && n.file.omitted !== 'budget' ? ` · ${n.file.omitted}` : '';
        item.description = `${dir}${fileStatus[n.file.status] ?? n.file.status}${what}`;
        if (n.file.note) item.tooltip = n.file.note;
        item.resourceUri = vscode.Uri.file(n.file.path);
        item.contextValue = 'bcodeTaskFile';
        item.command = { command: 'bcode.tasks.openFile', title: 'Open diff', arguments: [n] };
        return item;
      }
      case 'events': {
        const item = new vscode.TreeItem('Events', vscode.TreeItemCollapsibleState.Collapsed);
        item.id = 'events:' + n.task.id;
        item.iconPath = new vscode.ThemeIcon('history');
        item.command = { command: 'bcode.tasks.showEvents', title: 'Show events', arguments: [n] };
        return item;
      }
      case 'event': {
        const item = new vscode.TreeItem(n.label, vscode.TreeItemCollapsibleState.None);
        item.id = `event:${n.task.id}:${n.seq}`;
        item.description = n.description;
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(n.text, vscode.TreeItemCollapsibleState.None);
        item.tooltip = n.tooltip ?? n.text;
        item.iconPath = new vscode.ThemeIcon('info');
        return item;
      }
    }
  }

  async getChildren(n?: Node): Promise<Node[]> {
    if (!n) {
      if (!this.api) return [{ kind: 'message', text: this.problem ?? 'bcode-ls is starting…' }];
      try {
        this.tasks = (await this.api.tasks()).tasks;
      } catch (e) {
        return [{ kind: 'message', text: `bcode/tasks failed: ${(e as Error).message}` }];
      }
      return this.tasks.map((task) => ({ kind: 'task', task }));
    }
    switch (n.kind) {
      case 'task': {
        const kids: Node[] = [{ kind: 'files', task: n.task }, { kind: 'events', task: n.task }];
        if (n.task.reason) kids.unshift({ kind: 'reason', task: n.task, text: n.task.reason });
        // The last gate run, whatever its verdict: its test table and findings.
        const detail = await this.detail(n.task.id).catch(() => undefined);
        if (detail?.oracle) {
          const o = oracleText(detail.oracle);
          kids.push({ kind: 'message', text: o.text, tooltip: o.tooltip });
        }
        if (detail?.verification) kids.push({ kind: 'check', task: n.task, detail });
        return kids;
      }
      case 'check': {
        return checkRows(n.detail.verification?.report).map((row, i) => ({ kind: 'checkRow', task: n.task, row, n: i }));
      }
      case 'files': {
        try {
          if (!this.api) throw new Error(this.problem ?? 'bcode-ls is not running');
          const diff = await this.diffs.task(n.task.id);
          if (diff.files.length === 0) return [{ kind: 'message', text: diff.notes?.[0] ?? 'no changes yet' }];
          return diff.files.map((file) => ({ kind: 'file', task: n.task, diff, file }));
        } catch (e) {
          return [{ kind: 'message', text: (e as Error).message }];
        }
      }
      case 'events': {
        try {
          const d = await this.detail(n.task.id);
          return d.events.slice().reverse().map((e) => ({
            kind: 'event', task: n.task, seq: e.seq, label: e.kind,
            description: `#${e.seq} ${e.at.replace('T', ' ').replace(/\.\d+Z$|Z$/, '')}${e.attempt ? ` · attempt ${e.attempt}` : ''}`,
          }));
        } catch (e) {
          return [{ kind: 'message', text: (e as Error).message }];
        }
      }
    }
    return [];
  }
}
