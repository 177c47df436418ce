// One bcode-ls per workspace folder: the server serves one checkout (its
// rootUri), so a multi-root workspace gets one client per folder that holds
// a Go or Python project. A session owns its client's whole life: finding
// the executable again on every (re)start, so a server installed or a
// setting fixed after a failure is picked up by "Restart"; and its state,
// which the status bar and the Tasks view follow through onDidChange.
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, RevealOutputChannelOn, ServerOptions, State, WorkspaceEdit as LspWorkspaceEdit } from 'vscode-languageclient/node';
import * as readline from 'readline';
import { BcodeApi, Cancelled } from './api';
import { contentWithFallback } from './content';
import { askGoal, previewPack } from './commands';
import { LineMutants, LspCodeAction, Method, PackArgs, ServerCommand, TaskChanged, TaskCreateArgs, TaskResult } from './protocol';
import { announceStart } from './taskStart';
import { levelOf } from './serverLog';
import { serverSettings } from './settings';

/**
 * The languages whose documents bcode-ls serves: those bcode judges
 * (engine/check.Adapters: Go, Python, JavaScript and TypeScript, Rust).
 * package.json's onLanguage activation events name the same.
 */
export const projectLanguages = new Set(['go', 'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact', 'rust']);
import { goBinDirs, installCommand, installHint, resolveServer } from './serverPath';

export type SessionState = 'starting' | 'running' | 'stopped' | 'missing';

export interface SessionHooks {
  output: vscode.LogOutputChannel;
  /** a publishDiagnostics arrived: the evidence state may have changed */
  diagnostics(s: Session): void;
  taskChanged(s: Session, c: TaskChanged): void;
}

const stoppedProblem = 'bcode-ls stopped: see the bcode output channel, then run "bcode: Restart Language Server"';

/**
 * BcodeClient leaves telling the user to the session. vscode-languageclient
 * forces its own error notifications ("couldn't create connection to
 * server", "Server initialization failed", the crash notice) beside the
 * session's, which say the same failure with what to do; they stay in the
 * output channel.
 */
class BcodeClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | 'force'): void {
    super.error(message, data, false);
  }
}

/** How long a stopped client may take to restart itself before the user is told it stopped. */
const restartGraceMs = 5000;

/** The server commands whose answer is a task that may be starting. */
const startsTask = new Set<string>([ServerCommand.taskCreate, ServerCommand.taskRun, ServerCommand.taskResume]);

export class Session implements vscode.Disposable {
  // A session is made to be started: it says "starting" until its server
  // answers initialize (or fails), never "off" in between.
  state: SessionState = 'starting';
  /** why the server is not running, when it is not */
  problem: string | undefined;
  api: BcodeApi | undefined;
  private client: LanguageClient | undefined;
  private generation = 0;
  private readonly changed = new vscode.EventEmitter<Session>();
  readonly onDidChange = this.changed.event;

  constructor(readonly folder: vscode.WorkspaceFolder, private readonly hooks: SessionHooks) {}

  /** sendSettings tells a running bcode-ls the current settings. */
  async sendSettings(): Promise<void> {
    const c = this.client;
    if (!c || c.state !== State.Running) return;
    await c.sendNotification('workspace/didChangeConfiguration', { settings: serverSettings(this.folder) });
  }

  private set(state: SessionState, problem: string | undefined): void {
    this.state = state;
    this.problem = problem;
    this.changed.fire(this);
  }

  /**
   * start (re)starts bcode-ls for the folder: it stops a running one, finds
   * the executable again and starts it. A missing server is a notification
   * that carries the install line and a Restart button.
   */
  start(): Promise<void> {
    // One (re)start at a time: a client stopped while it is still starting
    // keeps the commands it registers, and the next one cannot register
    // them again ("command 'bcode.task.create' already exists").
    const gen = ++this.generation;
    const next = this.queue.then(() => (gen === this.generation ? this.startNow(gen) : undefined));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private queue: Promise<void> = Promise.resolve();
  private starting: Promise<void> | undefined;

  private async startNow(gen: number): Promise<void> {
    await this.stopClient();
    this.set('starting', undefined);
    const cfg = vscode.workspace.getConfiguration('bcode', this.folder.uri);
    const found = resolveServer(cfg.get<string>('serverPath'), process.env.PATH, this.folder.uri.fsPath, await goBinDirs());
    if (gen !== this.generation) return; // a newer start won
    if (!found.ok) {
      this.set('missing', `${found.message} ${found.fix}`);
      this.hooks.output.warn(`${this.folder.name}: ${found.message}`);
      void this.offerFix(`bcode: ${found.message} Install it ${installHint}.`, true);
      return;
    }
    const client = this.newClient(found.path, cfg);
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) return; // an old client stopping after a restart
      if (e.newState === State.Running) {
        this.api = new BcodeApi(client);
        this.set('running', undefined);
      } else if (e.newState === State.Stopped) {
        this.api = undefined;
        this.set('stopped', stoppedProblem);
        // The client restarts a crashed server by itself (Stopped, then
        // Starting): only one that stays stopped is news, told once.
        setTimeout(() => {
          if (this.client === client && client.state === State.Stopped) void this.offerFix(`bcode: ${stoppedProblem}`, false);
        }, restartGraceMs).unref?.();
      } else {
        this.api = undefined;
        this.set('starting', undefined);
      }
    });
    client.onNotification(Method.taskChanged, (c: TaskChanged) => this.hooks.taskChanged(this, c));
    try {
      this.starting = client.start();
      await this.starting;
    } catch (e) {
      if (this.client !== client) return;
      this.api = undefined;
      const why = `bcode-ls (${found.path}) failed to start: ${(e as Error).message}`;
      this.set('stopped', why);
      void this.offerFix(`bcode: ${why}`, false);
      return;
    }
    if (this.client === client && client.state === State.Running && this.state !== 'running') {
      this.api = new BcodeApi(client);
      this.set('running', undefined);
    }
  }

  private async offerFix(message: string, missing: boolean): Promise<void> {
    const actions = missing ? ['Restart', 'Copy Install Command', 'Open Settings'] : ['Restart', 'Show Log'];
    const choice = await vscode.window.showErrorMessage(message, ...actions);
    switch (choice) {
      case 'Restart': await vscode.commands.executeCommand('bcode.restartServer'); break;
      case 'Copy Install Command': await vscode.env.clipboard.writeText(installCommand); break;
      case 'Open Settings': await vscode.commands.executeCommand('workbench.action.openSettings', 'bcode.serverPath'); break;
      case 'Show Log': this.hooks.output.show(true); break;
    }
  }

  private newClient(command: string, cfg: vscode.WorkspaceConfiguration): LanguageClient {
    const dir = this.folder.uri.fsPath;
    const serverOptions: ServerOptions = {
      command,
      args: ['--stdio', ...(cfg.get<string[]>('serverArgs') ?? [])],
      options: { cwd: dir },
    };
    const pattern = `${dir.replace(/\\/g, '/')}/**`;
    const log = this.hooks.output;
    const clientOptions: LanguageClientOptions = {
      // bcode-ls's settings (docs/lsp.md); later changes go through
      // workspace/didChangeConfiguration (see serverSettings).
      initializationOptions: serverSettings(this.folder),
      documentSelector: [...projectLanguages].map((language) => ({ scheme: 'file', language, pattern })),
      // A failed request is logged, not shown: the extension tells the
      // user itself, once (a second toast for the same failure said the
      // same thing twice).
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // A failed initialize stops the client without its own message: the
      // session's "failed to start" (with Restart and Show Log) says it.
      initializationFailedHandler: () => false,
      workspaceFolder: this.folder,
      outputChannel: log,
      // bcode-ls's stderr is its slog log: INFO is info, not an error.
      stdioOptions: {
        stdout: (input) => { readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (l) => log.info(l)); },
        stderr: (input) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (l) => log[levelOf(l)](l));
        },
      },
      middleware: {
        handleDiagnostics: (uri, diagnostics, next) => {
          next(uri, diagnostics);
          this.hooks.diagnostics(this);
        },
        // Every server command a code action runs comes through here, so
        // each outcome is told once: a failure is one error (the client's
        // own "Request failed" notification is off, see
        // revealOutputChannelOn), a started task one closing progress.
        executeCommand: (command, args, next) => this.runServerCommand(command, args, next),
        provideTextDocumentContent: (uri, token, next) =>
          contentWithFallback(uri.toString(), () => next(uri, token) as PromiseLike<string | null | undefined>, (u) => {
            if (!this.api) throw new Error(this.problem ?? 'bcode-ls is not running');
            return this.api.documentContent(u);
          }),
      },
    };
    const name = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders.length > 1 ? `bcode (${this.folder.name})` : 'bcode';
    return new BcodeClient('bcode', name, serverOptions, clientOptions);
  }

  /**
   * runServerCommand runs a server command a code action carries. "Create
   * task from selection" (`ask`) asks the user for the goal first; "Show
   * all surviving mutants on this line" becomes a quick pick of every
   * mutant's actions; a task that starts gets its start notification; a
   * failure is one error message.
   */
  private async runServerCommand(command: string, args: any[], next: (command: string, args: any[]) => Promise<any>): Promise<unknown> {
    try {
      let a = args?.[0] as TaskCreateArgs | undefined;
      if (command === ServerCommand.taskCreate && a?.ask) {
        const goal = await askGoal(a.goal);
        if (goal === undefined) return undefined;
        a = { ...a, goal, ask: false };
        args = [a];
      }
      if (command === ServerCommand.packPreview && this.api) {
        // The code action's preview, with the same cancellable progress.
        const p = (a ?? {}) as PackArgs;
        return await previewPack(this.api, p, p.uri ? vscode.workspace.asRelativePath(vscode.Uri.parse(p.uri)) : undefined);
      }
      const r = await next(command, args);
      if (command === ServerCommand.mutantActions) {
        await this.pickMutantAction(r as LineMutants);
      } else if (startsTask.has(command) && r && typeof (r as TaskResult).id === 'string') {
        announceStart(r as TaskResult);
      }
      return r;
    } catch (e) {
      if (!(e instanceof Cancelled)) void vscode.window.showErrorMessage(`bcode: ${(e as Error).message}`);
      return undefined;
    }
  }

  /** pickMutantAction shows every action of a line's surviving mutants, mutant by mutant, and runs the one picked. */
  private async pickMutantAction(line: LineMutants): Promise<void> {
    type Item = vscode.QuickPickItem & { action?: LspCodeAction };
    const items: Item[] = [];
    for (const m of line.mutants ?? []) {
      items.push({ label: `mutant ${m.rewrite}`, kind: vscode.QuickPickItemKind.Separator });
      for (const action of m.actions) {
        items.push({ label: action.title.replace(/^bcode: /, '').replace(/: `[^]*$/, ''), description: m.rewrite, action });
      }
    }
    const n = line.mutants?.length ?? 0;
    const pick = await vscode.window.showQuickPick(items, {
      title: `bcode: ${n} surviving mutant${n === 1 ? '' : 's'} on line ${line.line + 1}`,
      placeHolder: 'Pick what to do about one of them',
      matchOnDescription: true,
    });
    const act = pick?.action;
    if (!act) return;
    if (act.edit) {
      const client = this.client;
      if (!client) throw new Error(this.problem ?? 'bcode-ls is not running');
      const edit = await client.protocol2CodeConverter.asWorkspaceEdit(act.edit as LspWorkspaceEdit);
      if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`the edit of "${act.title}" could not be applied (the file changed?)`);
    }
    if (act.command) await vscode.commands.executeCommand(act.command.command, ...(act.command.arguments ?? []));
  }

  private async stopClient(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    this.api = undefined;
    if (!c) return;
    // A client can only be stopped once it runs: let a start in flight
    // (the client's own restart after a crash included) finish first.
    await this.starting?.catch(() => undefined);
    this.starting = undefined;
    for (let i = 0; i < 50 && c.state === State.Starting; i++) await new Promise((r) => setTimeout(r, 100));
    try {
      await c.dispose(5000);
    } catch (e) {
      this.hooks.output.warn(`stopping bcode-ls: ${(e as Error).message}`);
    }
  }

  async stop(): Promise<void> {
    this.generation++;
    const done = this.queue.then(() => this.stopClient());
    this.queue = done.catch(() => undefined);
    await done;
    this.set('stopped', 'bcode-ls is stopped');
  }

  dispose(): void {
    void this.stop();
    this.changed.dispose();
  }
}
