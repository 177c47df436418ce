// The bcode extension: starts bcode-ls --stdio and puts its diagnostics,
// code actions, tasks, context packs and evidence state in VS Code.
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions, State } from 'vscode-languageclient/node';
import { BcodeApi } from './api';
import { registerCommands } from './commands';
import { contentWithFallback } from './content';
import { Method, TaskChanged } from './protocol';
import { resolveServer } from './serverPath';
import { EvidenceStatus } from './statusBar';
import { TasksTree } from './tasksTree';
import { EventsProvider, eventsScheme, TaskDiffProvider, taskDiffScheme } from './virtualDocs';

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('bcode', { log: true });
  let api: BcodeApi | undefined;
  let problem: string | undefined;
  const tree = new TasksTree(undefined);
  const status = new EvidenceStatus();
  const events = new EventsProvider(() => api);
  context.subscriptions.push(
    output, status,
    vscode.window.createTreeView('bcode.tasks', { treeDataProvider: tree, showCollapseAll: true }),
    vscode.workspace.registerTextDocumentContentProvider(taskDiffScheme, new TaskDiffProvider(tree.diffs)),
    vscode.workspace.registerTextDocumentContentProvider(eventsScheme, events),
    ...registerCommands({ api: () => api, tree, status, problem: () => problem }),
  );

  const folder = vscode.workspace.workspaceFolders?.[0];
  const cfg = vscode.workspace.getConfiguration('bcode');
  const found = resolveServer(cfg.get<string>('serverPath'), process.env.PATH, folder?.uri.fsPath);
  if (!found.ok) {
    problem = `${found.message} ${found.fix}`;
    tree.setApi(undefined, found.message);
    status.unavailable(problem);
    const choice = await vscode.window.showErrorMessage(`bcode: ${found.message}`, { detail: found.fix }, 'Open Settings');
    if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'bcode.serverPath');
    return;
  }

  let refreshTimer: NodeJS.Timeout | undefined;
  const refreshStatus = () => {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => {
      api?.evidence().then((r) => status.show(r), (e) => output.appendLine(`bcode/evidence: ${(e as Error).message}`));
    }, 200);
  };

  const serverOptions: ServerOptions = {
    command: found.path,
    args: ['--stdio', ...(cfg.get<string[]>('serverArgs') ?? [])],
    options: { cwd: folder?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file', language: 'go' }, { scheme: 'file', language: 'python' }],
    outputChannel: output,
    middleware: {
      handleDiagnostics: (uri, diagnostics, next) => {
        next(uri, diagnostics);
        refreshStatus();
      },
      provideTextDocumentContent: (uri, token, next) =>
        contentWithFallback(uri.toString(), () => next(uri, token) as PromiseLike<string | null | undefined>, (u) => api!.documentContent(u)),
    },
  };
  client = new LanguageClient('bcode', 'bcode', serverOptions, clientOptions);
  context.subscriptions.push(client.onDidChangeState((e) => {
    if (e.newState === State.Stopped) {
      api = undefined;
      problem = 'bcode-ls stopped: see the bcode output channel, then run "bcode: Restart bcode-ls"';
      tree.setApi(undefined, problem);
      status.unavailable(problem);
    }
  }));
  context.subscriptions.push(vscode.commands.registerCommand('bcode.restartServer', async () => {
    await client?.restart();
  }));
  try {
    await client.start();
  } catch (e) {
    problem = `bcode-ls (${found.path}) failed to start: ${(e as Error).message}`;
    tree.setApi(undefined, problem);
    status.unavailable(problem);
    void vscode.window.showErrorMessage(`bcode: ${problem}`);
    return;
  }
  api = new BcodeApi(client);
  problem = undefined;
  context.subscriptions.push(client.onNotification(Method.taskChanged, (c: TaskChanged) => {
    tree.taskChanged(c);
    events.refresh(c.id);
  }));
  tree.setApi(api);
  void vscode.commands.executeCommand('setContext', 'bcode.active', true);
  refreshStatus();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
