import {
  DocumentResult, EvidenceReport, EvidenceRunResult, Method, PackArgs, ServerCommand,
  TaskCreateArgs, TaskDetail, TaskDiffResult, TaskResult, TasksResult,
} from './protocol';

/**
 * The part of a JSON-RPC connection the API needs. Both vscode-languageclient's
 * LanguageClient and vscode-languageserver-protocol's ProtocolConnection have
 * it, so the same code runs in the editor and in the protocol tests.
 */
export interface RequestSender {
  sendRequest(method: string, params?: unknown): Promise<unknown>;
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

  private command<T>(command: string, arg: unknown): Promise<T> {
    return this.conn.sendRequest('workspace/executeCommand', { command, arguments: [arg] }) as Promise<T>;
  }

  createTask(a: TaskCreateArgs): Promise<TaskResult> { return this.command(ServerCommand.taskCreate, a); }
  runTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskRun, { id }); }
  resumeTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskResume, { id }); }
  cancelTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskCancel, { id }); }
  acceptTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskAccept, { id }); }
  rejectTask(id: string): Promise<TaskResult> { return this.command(ServerCommand.taskReject, { id }); }
  previewPack(a: PackArgs): Promise<DocumentResult> { return this.command(ServerCommand.packPreview, a); }
  runEvidence(base?: string): Promise<EvidenceRunResult> {
    return this.command(ServerCommand.evidenceRun, base ? { base } : {});
  }
}
