// The shapes of bcode-ls's own methods and commands (docs/lsp.md). They
// mirror server/custom_methods.go, server/evidence.go and
// server/command/interface.go; keep them in step with those files.

export const Method = {
  tasks: 'bcode/tasks',
  task: 'bcode/task',
  contextPack: 'bcode/contextPack',
  evidence: 'bcode/evidence',
  documentContent: 'bcode/documentContent',
  taskChanged: 'bcode/taskChanged',
  taskDiff: 'bcode/taskDiff',
} as const;

/** workspace/executeCommand commands served by bcode-ls. */
export const ServerCommand = {
  taskCreate: 'bcode.task.create',
  taskRun: 'bcode.task.run',
  taskResume: 'bcode.task.resume',
  taskCancel: 'bcode.task.cancel',
  taskAccept: 'bcode.task.accept',
  taskReject: 'bcode.task.reject',
  packPreview: 'bcode.pack.preview',
  evidenceRun: 'bcode.evidence.run',
  mutantDiff: 'bcode.mutant.diff',
  taskDiff: 'bcode.task.diff',
  mutantActions: 'bcode.mutant.actions',
} as const;

export type TaskStatus =
  | 'queued' | 'running' | 'verified' | 'blocked'
  | 'cancelled' | 'accepted' | 'rejected' | 'failed' | 'not_reproducible';

export interface EventSummary { seq: number; kind: string; at: string }

export interface TaskSummary {
  id: string;
  goal: string;
  status: TaskStatus | string;
  verdict?: string;
  reason?: string;
  branch: string;
  updatedAt: string;
  lastEvent?: EventSummary;
  /** the newest attempt's number and its last finished turn (absent: none yet) */
  attempt?: number;
  turn?: number;
  /** what the last event was, in words (from bcode/taskChanged's summary) */
  summary?: string;
}

export interface TasksResult { tasks: TaskSummary[] }

export interface Task {
  id: string;
  repo: string;
  goal: string;
  base: string;
  branch: string;
  status: string;
  reason?: string;
  verdict?: string;
  created_at: string;
  updated_at: string;
}

export interface TaskEvent {
  seq: number;
  task_id: string;
  attempt?: number;
  kind: string;
  data?: unknown;
  at: string;
}

export interface TaskDetail {
  task: Task;
  attempts: Array<{ number: number; status: string; verdict?: string; note?: string }>;
  /** the newest events (at most eventsLimit), oldest first */
  events: TaskEvent[];
  /** how many older events were left out */
  eventsOmitted?: number;
  /** the task's last gate run; report is the whole verify.Report (`bcode check --json`) */
  verification?: { verdict: string; base: string; head: string; report?: CheckReport };
  /** the task's reproduction (--reproduce), when it has one */
  oracle?: Oracle;
}

/** One new or modified test and what it earned (verify.TestReport). */
export interface CheckTest {
  name: string;
  package?: string;
  file?: string;
  base_outcome?: string;
  head_outcome?: string;
  credited?: boolean;
  reason?: string;
  reason_text?: string;
  /** set for a test of the task's pinned oracle (--reproduce) */
  oracle?: boolean;
}

/** What the gate found the change tampered with (verify.Finding). */
export interface CheckFinding { code: string; path: string; line?: number; message: string }

/** The gate's report, the parts the Tasks view shows (verify.Report). */
export interface CheckReport {
  verdict: string;
  reasons?: Array<{ code: string; message: string }>;
  tests?: CheckTest[] | null;
  tamper?: CheckFinding[] | null;
  /** the verification level reached (V1, V2, V3 or none), the one the base asks for, and what the next level lacks */
  level?: string;
  level_required?: string;
  level_missing?: string;
  /** the task's pinned oracle, by test ID */
  oracle?: string[] | null;
}

/** A task's reproduction (engine.Oracle): the --reproduce command and, once pinned, its failing tests. */
export interface Oracle {
  command: string;
  tests?: Array<{ language: string; package: string; file?: string; name: string }> | null;
  files?: Array<{ path: string; sha256: string }> | null;
  pinned_at?: string;
}

export interface TaskChanged {
  id: string;
  status: string;
  verdict?: string;
  reason?: string;
  /** the kind of the ledger event that changed the task */
  kind?: string;
  /** when that event happened (RFC 3339) */
  at?: string;
  /** the same as kind (the first version's name for it) */
  event: string;
  seq?: number;
  /** the task's newest attempt and that attempt's last finished turn */
  attempt?: number;
  turn?: number;
  /** what the event was, in words */
  summary?: string;
  /** set on the event that ends a run (verified, blocked, failed) */
  ended?: boolean;
}

/** One changed file of a task (server/command.FileDiff). */
export interface FileDiff {
  path: string;
  /** git's letter: A added, M modified, D deleted, T type changed */
  status: string;
  baseContent?: string;
  headContent?: string;
  baseSize: number;
  headSize: number;
  binary?: boolean;
  /** why the contents are not here: binary, large, budget, submodule */
  omitted?: 'binary' | 'large' | 'budget' | 'submodule' | string;
  note?: string;
}

/** bcode/taskDiff's answer (server/command.TaskDiffResult). */
export interface TaskDiffResult {
  id: string;
  branch: string;
  base: string;
  head?: string;
  /** sha256:<hex> of the whole change base..head: passed back on accept so that exactly this change lands */
  digest?: string;
  files: FileDiff[];
  diff: string;
  truncated?: boolean;
  notes?: string[];
}

export interface Mutant {
  id: string;
  file: string;
  line: number;
  operator: string;
  original: string;
  mutated: string;
  verdict: string;
}

export interface EvidenceReport {
  run: number;
  state: 'none' | 'running' | 'done' | 'failed' | 'cancelled' | string;
  reason?: string;
  base?: string;
  head?: string;
  error?: string;
  mutants: Mutant[];
  notes?: string[];
}

export interface TaskResult { id: string; status: string; message?: string }

/** A code action as bcode-ls sends it: a command or an edit (LSP CodeAction). */
export interface LspCodeAction {
  title: string;
  kind?: string;
  command?: { title: string; command: string; arguments?: unknown[] };
  edit?: unknown;
}

/** bcode.mutant.actions's answer: every quick fix of one line's surviving mutants. */
export interface LineMutants {
  uri: string;
  line: number;
  mutants: Array<{ id: string; rewrite: string; actions: LspCodeAction[] }>;
}
export interface DocumentResult { uri: string; shown: boolean; text: string }
export interface EvidenceRunResult { run: number; token: string }

export interface LspRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

export interface PackArgs { uri?: string; range?: LspRange; goal?: string; taskId?: string; budget?: number }
export interface TaskCreateArgs {
  goal: string; uri?: string; range?: LspRange; criteria?: string[]; run?: boolean;
  /** ask the user for the goal first, offering `goal` (set by the code action) */
  ask?: boolean;
}
