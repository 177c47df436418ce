import {
  DocumentResult, EvidenceReport, EvidenceRunResult, LineMutants, Method, PackArgs, ServerCommand,
  TaskCreateArgs, TaskDetail, TaskDiffResult, TaskResult, TasksResult,
} from './protocol';

/**
 * The part of a JSON-RPC connection the API needs. Both vscode-languageclient's
 * LanguageClient and vscode-languageserver-protocol's ProtocolConnection have
 * it, so the same code runs in the editor and in the protocol tests.
 */
export interface RequestSender {
  sendRequest(method: string, params?: unknown, token?: CancelToken): Promise<unknown>;
}

/** The part of a cancellation token the API passes on (vscode's and vscode-jsonrpc's both fit). */
export interface CancelToken {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): { dispose(): unknown };
}

/** Cancelled is the error of a request the user cancelled. */
export class Cancelled extends Error {
  constructor() { super('cancelled'); this.name = 'Cancelled'; }
}

/** BcodeApi is every request the extension makes of bcode-ls, typed. */
export class BcodeApi {
  constructor(private readonly conn: RequestSender) {}

  async tasks(): Promise<TasksResult> {
    const r = (await this.conn.sendRequest(Method.tasks, {})) as TasksResult;
    return { tasks: r?.tasks ?? [] };
  }

  task(id: string, eventsLimit = 200): Promise<TaskDetail> {
    return this.conn.sendRequest(Method.task, { id, eventsLimit }) as Promise<TaskDetail>;
  }

  /** A task's change as the server reads it from git; path narrows it to one file. */
  taskDiff(id: string, path?: string): Promise<TaskDiffResult> {
    return this.conn.sendRequest(Method.taskDiff, path ? { id, path } : { id }) as Promise<TaskDiffResult>;
  }

  evidence(wait = false): Promise<EvidenceReport> {
    return this.conn.sendRequest(Method.evidence, wait ? { wait } : {}) as Promise<EvidenceReport>;
  }

  contextPack(args: PackArgs): Promise<unknown> {
    return this.conn.sendRequest(Method.contextPack, args);
  }

  /** The text of a bcode-pack: or bcode-mutant: document, through the plain request. */
  async documentContent(uri: string): Promise<string> {
    const r = (await this.conn.sendRequest(Method.documentContent, { uri })) as { text: string };
    return r.text;
  }

  /**
   * command runs a server command. With a token, cancelling it sends
   * $/cancelRequest (the client does) and rejects at once with Cancelled,
   * without waiting for the server to stop.
   */
  private command<T>(command: string, arg: unknown, token?: CancelToken): Promise<T> {
    const params = { command, arguments: [arg] };
    if (!token) return this.conn.sendRequest('workspace/executeCommand', params) as Promise<T>;
    if (token.isCancellationRequested) return Promise.reject(new Cancelled());
    return new Promise<T>((resolve, reject) => {
      const sub = token.onCancellationRequested(() => { sub.dispose(); reject(new Cancelled()); });
      (this.conn.sendRequest('workspace/executeCommand', params, token) as Promise<T>).then(
        (r) => { sub.dispose(); resolve(r); },
        (e) => { sub.dispose(); reject(token.isCancellationRequested ? new Cancelled() : e); });
    });
  }

  createTask(a: TaskCreateArgs): Promise<TaskResult> { return this.command(ServerCommand.taskCreate, a); }
  runTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskRun, { id }); }
  resumeTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskResume, { id }); }
  cancelTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskCancel, { id }); }
  /** acceptTask lands a task; digest is the digest of the change the user was shown (TaskDiffResult.digest): the server refuses, landing nothing, when the task's change is another now. */
  acceptTask(id: string, digest?: string): Promise<TaskResult> { return this.command(ServerCommand.taskAccept, digest ? { id, digest } : { id }); }
  rejectTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskReject, { id }); }
  previewPack(a: PackArgs, token?: CancelToken): Promise<DocumentResult> { return this.command(ServerCommand.packPreview, a, token); }
  /** Every quick fix of the surviving mutants on one line (0-based). */
  mutantActions(uri: string, line: number): Promise<LineMutants> { return this.command(ServerCommand.mutantActions, { uri, line }); }
  runEvidence(base?: string): Promise<EvidenceRunResult> {
    return this.command(ServerCommand.evidenceRun, base ? { base } : {});
  }
}
