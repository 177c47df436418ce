// The bcode extension: starts bcode-ls --stdio for each workspace folder
// with a Go or Python project and puts its diagnostics, code actions,
// tasks, context packs and evidence state in VS Code.
import * as vscode from 'vscode';
import { BcodeApi } from './api';
import { registerCommands } from './commands';
import { projectLanguages, Session } from './session';
import { EvidenceStatus } from './statusBar';
import { endNotice } from './tasksModel';
import { taskStartSeen } from './taskStart';
import { TasksTree } from './tasksTree';
import { TaskChanged } from './protocol';
import { EventsProvider, eventsScheme, TaskDiffProvider, taskDiffScheme } from './virtualDocs';

/** What makes a folder a bcode project; package.json's activationEvents name the same files. */
export const projectFiles = '**/{go.mod,pyproject.toml,setup.py,setup.cfg,pytest.ini,package.json,Cargo.toml}';

const sessions = new Map<string, Session>();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('bcode', { log: true });
  const tree = new TasksTree(undefined);
  const status = new EvidenceStatus();
  const view = vscode.window.createTreeView('bcode.tasks', { treeDataProvider: tree, showCollapseAll: true });
  let current: Session | undefined;
  // Until the workspace's folders are looked at, bcode-ls is about to
  // start, not off: the status bar says "starting".
  let scanning = true;
  const api = (): BcodeApi | undefined => current?.api;
  const problem = (): string | undefined => current ? current.problem : 'no Go or Python project in this workspace: bcode-ls starts when one is opened';
  const events = new EventsProvider(api);

  let refreshTimer: NodeJS.Timeout | undefined;
  const refreshStatus = () => {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => {
      const s = current;
      s?.api?.evidence().then((r) => { if (s === current && s.api) status.show(r); }, (e) => {
        output.warn(`bcode/evidence: ${(e as Error).message}`);
        if (s === current && s.api) status.show(undefined);
      });
    }, 200);
  };

  // show makes the status bar, the Tasks view and the palette's `when`
  // context follow the current session's state.
  const show = () => {
    const s = current;
    const running = s?.state === 'running' && !!s.api;
    void vscode.commands.executeCommand('setContext', 'bcode.active', running);
    view.description = s && sessions.size > 1 ? s.folder.name : undefined;
    if (running) {
      tree.setApi(s!.api);
      // "starting" stays until bcode/evidence answers: the next text is
      // the real evidence state, not a guess.
      if (!status.showsEvidence) status.starting();
      refreshStatus();
    } else if (s?.state === 'starting' || (!s && scanning)) {
      tree.setApi(undefined, 'bcode-ls is starting…');
      status.starting();
    } else {
      tree.setApi(undefined, problem());
      status.unavailable(problem() ?? 'bcode-ls is not running');
    }
  };

  // The current session is the active editor's folder's, else the first.
  const pickCurrent = () => {
    const doc = vscode.window.activeTextEditor?.document;
    const folder = doc ? vscode.workspace.getWorkspaceFolder(doc.uri) : undefined;
    const next = (folder && sessions.get(folder.uri.toString())) ?? (current && sessions.has(current.folder.uri.toString()) ? current : sessions.values().next().value);
    if (next !== current) {
      current = next;
      show();
    }
  };

  const open = (folder: vscode.WorkspaceFolder): Session => {
    const key = folder.uri.toString();
    let s = sessions.get(key);
    if (s) return s;
    s = new Session(folder, {
      output,
      diagnostics: (from) => { if (from === current) refreshStatus(); },
      taskChanged: (from, c) => {
        taskStartSeen(c);
        if (from !== current) return;
        tree.taskChanged(c);
        events.refresh(c.id);
        if (c.ended) void announceEnd(c, tree.task(c.id)?.goal);
      },
    });
    sessions.set(key, s);
    s.onDidChange((from) => { if (from === current) show(); });
    pickCurrent();
    void s.start();
    return s;
  };

  const close = async (folder: vscode.WorkspaceFolder) => {
    const s = sessions.get(folder.uri.toString());
    if (!s) return;
    sessions.delete(folder.uri.toString());
    await s.stop();
    s.dispose();
    if (current === s) current = undefined;
    pickCurrent();
    if (!current) show();
  };

  // A folder is a bcode project when it holds go.mod, pyproject.toml,
  // setup.py, setup.cfg, pytest.ini, package.json or Cargo.toml outside
  // node_modules, or when a file of a language bcode judges is opened.
  const consider = async (folder: vscode.WorkspaceFolder) => {
    const hits = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, projectFiles), '**/node_modules/**', 1);
    if (hits.length > 0) open(folder);
  };
  const considerDocument = (doc: vscode.TextDocument) => {
    if (doc.uri.scheme !== 'file' || !projectLanguages.has(doc.languageId)) return;
    const folder = vscode.workspace.getWorkspaceFolder(doc.uri);
    if (folder) open(folder);
  };

  context.subscriptions.push(
    output, status, view,
    vscode.workspace.registerTextDocumentContentProvider(taskDiffScheme, new TaskDiffProvider(tree.diffs)),
    vscode.workspace.registerTextDocumentContentProvider(eventsScheme, events),
    ...registerCommands({ api, tree, status, problem }),
    vscode.commands.registerCommand('bcode.restartServer', async () => {
      pickCurrent();
      if (!current) {
        await Promise.all((vscode.workspace.workspaceFolders ?? []).map(consider));
        if (sessions.size === 0) {
          void vscode.window.showInformationMessage('bcode: no Go or Python project in this workspace (go.mod, pyproject.toml, setup.py, setup.cfg or pytest.ini), so bcode-ls is not started.');
        }
        return;
      }
      // Restart every folder whose server is not running, and the current one.
      await Promise.all([...sessions.values()].filter((s) => s === current || s.state !== 'running').map((s) => s.start()));
    }),
    vscode.window.onDidChangeActiveTextEditor(() => pickCurrent()),
    // bcode-ls's own settings take effect at once, without a restart.
    vscode.workspace.onDidChangeConfiguration((e) => {
      for (const s of sessions.values()) {
        if (['evidenceOnSave', 'evidenceOnOpen', 'notCovered'].some((k) => e.affectsConfiguration(`bcode.${k}`, s.folder))) {
          void s.sendSettings();
        }
      }
    }),
    vscode.workspace.onDidOpenTextDocument(considerDocument),
    vscode.workspace.onDidChangeWorkspaceFolders(async (e) => {
      for (const f of e.removed) await close(f);
      for (const f of e.added) await consider(f);
    }),
    { dispose: () => { for (const s of sessions.values()) s.dispose(); sessions.clear(); } },
  );

  show();
  try {
    await Promise.all((vscode.workspace.workspaceFolders ?? []).map(consider));
    for (const doc of vscode.workspace.textDocuments) considerDocument(doc);
  } finally {
    scanning = false;
    if (!current) show();
  }
}

// announceEnd tells the user a run ended, with the task's diff, accept
// (verified only) and reject, or resume, one click away; each goes through
// the Tasks view's command (Accept asks before it touches the branch).
async function announceEnd(c: TaskChanged, goal: string | undefined): Promise<void> {
  const n = endNotice(c, goal);
  const show = n.error ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const choice = await show(n.message, ...n.actions);
  const command: Record<string, string> = { Diff: 'bcode.tasks.open', Accept: 'bcode.tasks.accept', Reject: 'bcode.tasks.reject', Resume: 'bcode.tasks.resume' };
  if (choice && command[choice]) await vscode.commands.executeCommand(command[choice], c.id);
}

export async function deactivate(): Promise<void> {
  await Promise.all([...sessions.values()].map((s) => s.stop()));
  sessions.clear();
}
