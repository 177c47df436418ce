// The extension's own commands: the Tasks view's actions, creating a task
// from the selection, the context-pack preview and running evidence. The
// server's commands (bcode.task.*, bcode.pack.preview, bcode.evidence.run)
// are registered by vscode-languageclient for the code actions; these wrap
// them with the editor's context, confirmations and views.
import * as vscode from 'vscode';
import { BcodeApi, Cancelled } from './api';
import { announceStart } from './taskStart';
import { checkoutState } from './git';
import { EvidenceStatus } from './statusBar';
import { acceptPlan } from './tasksModel';
import { Node, TasksTree } from './tasksTree';
import { eventsUri, taskDiffUri } from './virtualDocs';
import { DocumentResult, LspRange, PackArgs, TaskSummary } from './protocol';

export interface Deps {
  api: () => BcodeApi | undefined;
  tree: TasksTree;
  status: EvidenceStatus;
  /** why the server is not running, when it is not */
  problem: () => string | undefined;
}

/** Most diffs opened at once when a task is opened; the rest are in the tree. */
export const maxDiffsOnOpen = 8;

function taskOf(arg: unknown, tree: TasksTree): TaskSummary | undefined {
  if (typeof arg === 'string') return tree.task(arg);
  const n = arg as Node | undefined;
  if (n && typeof n === 'object' && 'task' in n) return n.task;
  return undefined;
}

function toRange(s: vscode.Selection | vscode.Range): LspRange {
  return { start: { line: s.start.line, character: s.start.character }, end: { line: s.end.line, character: s.end.character } };
}

/**
 * askGoal asks the user what a new task should achieve, offering
 * suggestion (made from the selection) to edit; undefined: they cancelled.
 * Both "Create Task from Selection" and the code action of the same name
 * (bcode.task.create with `ask`) come here.
 */
export async function askGoal(suggestion: string): Promise<string | undefined> {
  const goal = await vscode.window.showInputBox({
    title: 'bcode: new task from the selection',
    prompt: 'What should the task achieve? It starts at once in its own worktree; you accept or reject the verified result.',
    value: suggestion,
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() === '' ? 'say what the task should achieve' : undefined),
  });
  return goal === undefined || goal.trim() === '' ? undefined : goal.trim();
}

/**
 * fileEditor is the active editor when it shows a file on disk; else the
 * error says why the command cannot work there (an untitled buffer, a git
 * diff's side, an output channel) and what to do. what names the command.
 */
export function fileEditor(what: string): vscode.TextEditor {
  const ed = vscode.window.activeTextEditor;
  if (!ed) throw new Error(`${what} needs a file of the workspace: open one in the editor first`);
  const u = ed.document.uri;
  if (u.scheme !== 'file') {
    const kind = u.scheme === 'untitled' ? 'an untitled buffer, not saved to a file'
      : u.scheme === 'git' ? 'a git view of a file (a diff side or an old version)'
      : `a ${u.scheme}: document, not a file on disk`;
    throw new Error(`${what} works on files of the workspace; this editor shows ${kind}. Open the file itself (or save it) and run it there.`);
  }
  return ed;
}

/**
 * previewPack builds a context pack with a progress notification the user
 * can cancel (indexing a large repository takes a while; Cancel sends
 * $/cancelRequest and bcode-ls stops), then opens it unless the server
 * showed it already. where names the place in the title.
 */
export async function previewPack(api: BcodeApi, args: PackArgs, where: string | undefined): Promise<DocumentResult> {
  const r = await vscode.window.withProgress({
    location: vscode.ProgressLocation.Notification,
    title: `bcode: building the context pack${where ? ` for ${where}` : ''}…`,
    cancellable: true,
  }, (_progress, token) => api.previewPack(args, token));
  if (!r.shown) {
    // The server could not show it (or the client lacks showDocument):
    // open the bcode-pack: URI; its content comes from the server.
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(r.uri));
    await vscode.window.showTextDocument(doc, { preview: true });
  }
  return r;
}

export function registerCommands(d: Deps): vscode.Disposable[] {
  const need = (): BcodeApi => {
    const api = d.api();
    if (!api) throw new Error(d.problem() ?? 'bcode-ls is not running: see the bcode output channel');
    return api;
  };
  const run = (name: string, f: (...args: any[]) => Promise<unknown>) =>
    vscode.commands.registerCommand(name, async (...args: any[]) => {
      try {
        return await f(...args);
      } catch (e) {
        if (e instanceof Cancelled) return undefined; // the user asked for it: nothing to say
        void vscode.window.showErrorMessage(`bcode: ${(e as Error).message}`);
        return undefined;
      }
    });
  const pick = (arg: unknown): TaskSummary => {
    const t = taskOf(arg, d.tree);
    if (!t) throw new Error('no task selected: use the buttons of a task in the Tasks view');
    return t;
  };

  // Both sides are read-only bcode-taskdiff: documents whose text comes
  // from bcode/taskDiff.
  const openFileDiff = async (n: Extract<Node, { kind: 'file' }>) => {
    const d = n.diff;
    const left = taskDiffUri(d.id, 'base', n.file.path);
    const right = taskDiffUri(d.id, 'head', n.file.path);
    await vscode.commands.executeCommand('vscode.diff', left, right, `${n.file.path} (${d.base.slice(0, 7)} ↔ ${d.branch})`, { preview: false, preserveFocus: true });
  };

  return [
    run('bcode.tasks.refresh', async () => d.tree.refresh()),

    run('bcode.tasks.accept', async (arg) => {
      const s = pick(arg);
      const det = await d.tree.detail(s.id);
      if (det.task.status !== 'verified') {
        throw new Error(`task ${s.id} is ${det.task.status}, not verified: only a verified task can be accepted`);
      }
      const state = await checkoutState(det.task.repo, det.task.base, det.task.branch);
      const plan = acceptPlan(det.task, state);
      if (plan.blocked) {
        await vscode.window.showErrorMessage(plan.message, { modal: true, detail: plan.detail });
        return;
      }
      // The change the Tasks view shows (its cached bcode/taskDiff answer):
      // accept lands it only if the task's change is still that one.
      const shown = await d.tree.diffs.task(s.id);
      const detail = shown.digest ? `${plan.detail}\n\nChange ${shown.digest}` : plan.detail;
      const choice = await vscode.window.showWarningMessage(plan.message, { modal: true, detail }, 'Accept');
      if (choice !== 'Accept') return;
      const r = await need().acceptTask(s.id, shown.digest);
      d.tree.refresh();
      void vscode.window.showInformationMessage(`bcode: task ${r.id} is ${r.status}${r.message ? ': ' + r.message : ''}`);
    }),

    run('bcode.tasks.reject', async (arg) => {
      const s = pick(arg);
      const choice = await vscode.window.showWarningMessage(`Reject task ${s.id}?`,
        { modal: true, detail: `Its work on ${s.branch} is thrown away; your branch is not touched and the task's record stays in the ledger.` }, 'Reject');
      if (choice !== 'Reject') return;
      const r = await need().rejectTask(s.id);
      d.tree.refresh();
      void vscode.window.showInformationMessage(`bcode: task ${r.id} is ${r.status}`);
    }),

    run('bcode.tasks.resume', async (arg) => {
      const r = await need().resumeTask(pick(arg).id);
      announceStart(r);
    }),

    run('bcode.tasks.cancel', async (arg) => {
      const r = await need().cancelTask(pick(arg).id);
      d.tree.refresh();
      void vscode.window.showInformationMessage(`bcode: task ${r.id} is ${r.status}`);
    }),

    run('bcode.tasks.open', async (arg) => {
      const s = pick(arg);
      const det = await d.tree.detail(s.id);
      const files = (await d.tree.getChildren({ kind: 'files', task: s })).filter((n): n is Extract<Node, { kind: 'file' }> => n.kind === 'file');
      for (const f of files.slice(0, maxDiffsOnOpen)) await openFileDiff(f);
      if (files.length > maxDiffsOnOpen) {
        void vscode.window.showInformationMessage(`bcode: task ${s.id} changed ${files.length} files; the first ${maxDiffsOnOpen} are open, the rest are under Changes in the Tasks view`);
      }
      const doc = await vscode.workspace.openTextDocument(eventsUri(det.task.id));
      await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside, preserveFocus: true });
    }),

    run('bcode.tasks.openFile', async (n: Extract<Node, { kind: 'file' }>) => openFileDiff(n)),

    run('bcode.tasks.showEvents', async (arg) => {
      const doc = await vscode.workspace.openTextDocument(eventsUri(pick(arg).id));
      await vscode.window.showTextDocument(doc, { preview: true });
    }),

    run('bcode.createTask', async () => {
      const ed = fileEditor('Create Task from Selection');
      if (ed.selection.isEmpty) throw new Error('select the code the task is about first');
      const first = ed.document.lineAt(ed.selection.start.line).text.trim();
      const goal = await askGoal(`Change ${vscode.workspace.asRelativePath(ed.document.uri)} lines ${ed.selection.start.line + 1}-${ed.selection.end.line + 1}: ${first}`);
      if (!goal) return;
      const r = await need().createTask({ goal, uri: ed.document.uri.toString(), range: toRange(ed.selection), run: true });
      d.tree.refresh();
      announceStart(r);
    }),

    run('bcode.previewPack', async () => {
      // No editor: the workspace's pack; an editor: its file's, which
      // must be a file (bcode-ls reads the selection from the checkout).
      const ed = vscode.window.activeTextEditor ? fileEditor('Preview Context Pack') : undefined;
      const args = ed ? { uri: ed.document.uri.toString(), range: toRange(ed.selection) } : {};
      await previewPack(need(), args, ed ? vscode.workspace.asRelativePath(ed.document.uri) : undefined);
    }),

    run('bcode.runEvidence', async () => {
      const api = need();
      await api.runEvidence();
      d.status.show({ run: 0, state: 'running', mutants: [] });
      d.status.show(await api.evidence(true));
    }),
  ];
}
