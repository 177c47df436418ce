// Pure logic of the Tasks view: what a task row says, which actions it
// offers, how a bcode/taskChanged notification updates it, and what the
// Accept confirmation tells the user. No vscode import, so node --test can
// check it directly.
import { TaskChanged, TaskSummary } from './protocol';

/** The actions a task row can offer; each is one inline button. */
export interface TaskActions { accept: boolean; reject: boolean; resume: boolean; cancel: boolean }

const final = new Set(['accepted', 'rejected']);

/**
 * actionsFor mirrors engine/task's rules: only a verified task can be
 * accepted; blocked, failed, cancelled and interrupted tasks resume; queued
 * and running ones cancel; anything not final can be rejected.
 */
export function actionsFor(status: string): TaskActions {
  return {
    accept: status === 'verified',
    reject: !final.has(status),
    // A queued task "resumes" by running: the way to try again after a
    // start that failed (no model, no Docker, no image).
    resume: status === 'blocked' || status === 'failed' || status === 'cancelled' || status === 'queued',
    cancel: status === 'running' || status === 'queued',
  };
}

/**
 * contextValue is what package.json's `when` clauses match on
 * (`viewItem =~ /\+accept\b/`): the status and one +flag per action.
 */
export function contextValue(status: string): string {
  const a = actionsFor(status);
  const flags = (Object.keys(a) as Array<keyof TaskActions>).filter((k) => a[k]).map((k) => '+' + k);
  return ['bcodeTask', 'status=' + status, ...flags].join(' ');
}

/** The codicon and theme colour for a status. */
export function statusIcon(status: string): { id: string; color?: string } {
  switch (status) {
    case 'verified': return { id: 'pass', color: 'testing.iconPassed' };
    case 'running': return { id: 'sync~spin' };
    case 'queued': return { id: 'clock' };
    case 'blocked': return { id: 'debug-pause', color: 'list.warningForeground' };
    case 'failed': return { id: 'error', color: 'testing.iconFailed' };
    case 'cancelled': return { id: 'circle-slash' };
    case 'accepted': return { id: 'check-all', color: 'testing.iconPassed' };
    case 'rejected': return { id: 'trash' };
    case 'not_reproducible': return { id: 'debug-disconnect', color: 'list.warningForeground' };
  }
  return { id: 'question' };
}

/** ago is a short relative time ("3m ago") from an ISO time to now. */
export function ago(iso: string | undefined, now: Date = new Date()): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.round((now.getTime() - t) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export interface TaskRow {
  label: string;
  description: string;
  tooltip: string;
  contextValue: string;
  icon: { id: string; color?: string };
}

const explained = new Set(['failed', 'blocked', 'cancelled', 'queued', 'not_reproducible']);

/**
 * literal makes text from a task (its goal, reason, event kinds: the
 * user's, the agent's or the model's words) show as written in a Markdown
 * tooltip: every ASCII punctuation character is backslash-escaped, as
 * CommonMark allows for all of them, so no link, image, autolink, command
 * link, emphasis, heading or code span can come out of it. bcode-ls has
 * already made hidden characters visible.
 */
export function literal(s: string): string {
  return s.replace(/[!-/:-@[-`{-~]/g, '\\$&');
}

/** describe is what the Tasks view shows for one task: status, verdict and last event. */
export function describe(t: TaskSummary, now: Date = new Date()): TaskRow {
  const label = t.goal.length > 80 ? t.goal.slice(0, 79) + '…' : t.goal;
  const parts = [t.status];
  if (t.verdict && t.verdict !== t.status) parts.push(t.verdict);
  // Why a task stopped is the first thing to know about it: on the row,
  // not only in a log (the full text is its first child and the tooltip).
  if (t.reason && explained.has(t.status)) parts.push(t.reason.length > 60 ? t.reason.slice(0, 59) + '…' : t.reason);
  // Where the work is while it runs: attempt and turn.
  if (t.attempt && (t.status === 'running' || t.status === 'queued')) {
    parts.push(`attempt ${t.attempt}` + (t.turn ? ` turn ${t.turn}` : ''));
  }
  if (t.lastEvent) {
    const when = ago(t.lastEvent.at, now);
    const what = t.summary || t.lastEvent.kind;
    parts.push(when ? `${what} ${when}` : what);
  }
  const tip = [
    `**${literal(t.goal)}**`,
    '',
    `task ${literal(t.id)} on branch ${literal(t.branch)}`,
    `status: ${literal(t.status)}` + (t.verdict ? `, verdict: ${literal(t.verdict)}` : ''),
  ];
  if (t.reason) tip.push('', `reason: ${literal(t.reason)}`);
  if (t.attempt) tip.push('', `attempt ${t.attempt}` + (t.turn ? `, turn ${t.turn}` : ''));
  if (t.lastEvent) tip.push('', `last event: ${literal(t.lastEvent.kind)} (#${t.lastEvent.seq}) at ${literal(t.lastEvent.at)}`);
  return { label, description: parts.join(' · '), tooltip: tip.join('\n'), contextValue: contextValue(t.status), icon: statusIcon(t.status) };
}

/**
 * applyChanged folds a bcode/taskChanged notification into the list. It
 * returns false when the task is not in the list (a new task: the caller
 * fetches bcode/tasks again).
 */
export function applyChanged(tasks: TaskSummary[], c: TaskChanged, now: Date = new Date()): boolean {
  const t = tasks.find((x) => x.id === c.id);
  if (!t) return false;
  t.status = c.status;
  t.verdict = c.verdict;
  t.reason = c.reason;
  // The event's own kind and time, as the ledger recorded them; servers
  // before bcode/taskChanged carried them sent only `event`, so fall back
  // to that and to the time the notification arrived.
  const kind = c.kind || c.event;
  const at = c.at && !Number.isNaN(Date.parse(c.at)) ? c.at : now.toISOString();
  if (kind) t.lastEvent = { seq: c.seq ?? t.lastEvent?.seq ?? 0, kind, at };
  t.summary = c.summary;
  if (c.attempt !== undefined) t.attempt = c.attempt;
  if (c.turn !== undefined || c.attempt !== undefined) t.turn = c.turn;
  t.updatedAt = at;
  return true;
}

/**
 * endNotice is what the user is told when a run ends (bcode/taskChanged
 * with `ended`): the sentence and the buttons, Accept only for a verified
 * task.
 */
export function endNotice(c: TaskChanged, goal: string | undefined): { message: string; actions: string[]; error: boolean } {
  const what = goal ? `"${goal.length > 60 ? goal.slice(0, 59) + '…' : goal}"` : c.id;
  if (c.status === 'verified') {
    return { message: `bcode: task ${c.id} ${what} is verified: look at the diff, then accept or reject it.`, actions: ['Diff', 'Accept', 'Reject'], error: false };
  }
  const why = c.reason ? `: ${c.reason}` : '';
  return { message: `bcode: task ${c.id} ${what} is ${c.status}${why}`, actions: ['Diff', 'Resume', 'Reject'], error: true };
}

/** What git says about the user's checkout, for the Accept confirmation. */
export interface CheckoutState {
  branch: string | undefined; // undefined: detached HEAD
  head: string;
  dirty: boolean; // uncommitted changes to tracked files
  commits: number; // commits on the task branch since its base
}

/**
 * acceptPlan is the confirmation the user reads before Accept: what will
 * happen to their current branch. It follows engine/task's Accept: a
 * fast-forward when the branch has not moved since the task's base, else a
 * cherry-pick; never a push; refused on a dirty tree.
 */
export function acceptPlan(t: { id: string; branch: string; base: string }, s: CheckoutState): { message: string; detail: string; blocked: boolean } {
  const commits = `${s.commits} commit${s.commits === 1 ? '' : 's'}`;
  const short = (id: string) => id.slice(0, 7);
  const where = s.branch ? `your current branch ${s.branch}` : `your detached HEAD (${short(s.head)})`;
  let how: string;
  if (s.head === t.base) {
    how = `${where} will be fast-forwarded to ${t.branch} (${commits}); it is still at the task's base ${short(t.base)}.`;
  } else {
    how = `the ${commits} of ${t.branch} will be cherry-picked onto ${where}, which has moved since the task's base ${short(t.base)}. A conflict stops the accept and leaves your checkout as it was.`;
  }
  const detail = [how, 'Nothing is pushed. The task is recorded as accepted.'];
  if (s.dirty) {
    detail.unshift('Your working tree has uncommitted changes to tracked files: bcode will refuse to accept until you commit or stash them.');
  }
  return { message: `Accept task ${t.id}?`, detail: detail.join('\n\n'), blocked: s.dirty };
}
