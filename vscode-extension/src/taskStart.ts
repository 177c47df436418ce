// Telling the user a task was created or resumed without contradicting
// what comes next: bcode-ls answers "created and started" at once, and
// the run may still fail to start a moment later (no model, no Docker),
// which the server says in its own error. So the start is a progress
// notification that closes by itself when the run gets going or fails to
// start (bcode/taskChanged), never a success toast beside an error.
import * as vscode from 'vscode';
import { TaskChanged, TaskResult } from './protocol';

const waiting = new Map<string, () => void>();

/** How long the start notification waits for the run's first word. */
export const startWaitMs = 60_000;

/** startSettled reports whether c says a run got going, ended or could not start. */
export function startSettled(c: TaskChanged): boolean {
  const kind = c.kind || c.event;
  return kind === 'attempt.started' || kind === 'task.start_failed' || !!c.ended || !['running', 'queued'].includes(c.status);
}

/** taskStartSeen closes the start notification of c's task once its run has settled. */
export function taskStartSeen(c: TaskChanged): void {
  if (startSettled(c)) waiting.get(c.id)?.();
}

/**
 * announceStart tells the user what became of a create, run or resume: a
 * task that runs gets the closing progress notification; one the server
 * could not start gets one warning with the server's reason; anything
 * else one information message.
 */
export function announceStart(r: TaskResult): void {
  const said = `bcode: task ${r.id} ${r.message ?? r.status}`;
  if (r.status !== 'running') {
    const show = /not started/.test(r.message ?? '') ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void show(said);
    return;
  }
  waiting.get(r.id)?.();
  const verb = r.message?.startsWith('created') ? 'created, ' : r.message === 'resumed' ? 'resumed, ' : '';
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `bcode: task ${r.id} ${verb}starting its run…` }, () => new Promise<void>((resolve) => {
    const done = () => { clearTimeout(timer); if (waiting.get(r.id) === done) waiting.delete(r.id); resolve(); };
    const timer = setTimeout(done, startWaitMs);
    timer.unref?.(); // never what keeps a process alive
    waiting.set(r.id, done);
  }));
}
