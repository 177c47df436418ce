package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/verify"
)

// ErrRunning: a live runner holds the task, and the command needs it idle.
var ErrRunning = errors.New("task is running")

// withLease runs fn holding the task's lease (taken over, with recovery,
// from a dead runner), and releases it after. A live runner's lease makes
// it fail with an error wrapping ErrRunning and engine.ErrLeaseHeld.
func (e *Engine) withLease(ctx context.Context, id string, fn func(lease engine.Lease, t *engine.Task) error) error {
	return e.withLeaseFor(ctx, id, false, fn)
}

// withLeaseFor is withLease; discard skips recovering the worktrees'
// uncommitted edits (see claim).
func (e *Engine) withLeaseFor(ctx context.Context, id string, discard bool, fn func(lease engine.Lease, t *engine.Task) error) error {
	lease, _, err := e.claim(ctx, id, e.holder(), discard)
	if errors.Is(err, engine.ErrLeaseHeld) {
		return fmt.Errorf("%w: %w (cancel it first: bcode task cancel %s)", ErrRunning, err, id)
	}
	if err != nil {
		return err
	}
	defer e.Ledger.Release(context.WithoutCancel(ctx), lease)
	t, err := e.Ledger.Task(ctx, id)
	if err != nil {
		return err
	}
	return fn(lease, t)
}

func (e *Engine) appendData(ctx context.Context, lease *engine.Lease, id string, kind engine.EventKind, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = e.Ledger.Append(ctx, lease, &engine.Event{TaskID: id, Kind: kind, Data: raw})
	return err
}

// Cancel stops the task. With no live runner it is marked cancelled at
// once; otherwise a task.cancel_requested event asks the runner, which
// notices within one heartbeat, ends its step, commits what changed and
// marks the task cancelled. Cancel returns when the task is cancelled, or
// with ctx's error. A runner that never answers loses its lease after the
// TTL, and Cancel then takes it over and cancels itself.
func (e *Engine) Cancel(ctx context.Context, id, by string) error {
	requested := false
	for {
		t, err := e.Ledger.Task(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case t.Status == engine.TaskCancelled:
			return nil
		case Final(t.Status):
			return fmt.Errorf("task %s is %s: there is nothing to cancel", id, t.Status)
		}
		err = e.withLease(ctx, id, func(lease engine.Lease, t *engine.Task) error {
			if t.Status == engine.TaskCancelled || Final(t.Status) {
				return nil
			}
			t.Status, t.Reason = engine.TaskCancelled, "cancelled by "+by
			if err := e.Ledger.UpdateTask(ctx, lease, t); err != nil {
				return err
			}
			return e.appendData(ctx, &lease, id, EventCancelled, map[string]any{"by": by, "phase": "idle"})
		})
		if !errors.Is(err, ErrRunning) {
			return err
		}
		if !requested {
			if err := e.appendData(ctx, nil, id, EventCancelRequested, map[string]any{"by": by}); err != nil {
				return err
			}
			requested = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("task %s: the runner has not stopped yet: %w", id, ctx.Err())
		case <-time.After(e.poll()):
		}
	}
}

// Resume makes a task that stopped short (blocked, cancelled, failed, or
// left running by a dead runner) runnable again, raising its budgets by
// more, and returns it; the caller then runs it (engine/runner). When a
// budget would still be spent, it says which and changes nothing.
func (e *Engine) Resume(ctx context.Context, id string, more engine.Budgets) (*engine.Task, error) {
	var out *engine.Task
	err := e.withLease(ctx, id, func(lease engine.Lease, t *engine.Task) error {
		switch t.Status {
		case engine.TaskVerified:
			return fmt.Errorf("task %s is verified: accept it (bcode task accept %s) or reject it", id, id)
		case engine.TaskAccepted, engine.TaskRejected:
			return fmt.Errorf("task %s is %s: it cannot be resumed", id, t.Status)
		case engine.TaskNotReproducible:
			return fmt.Errorf("task %s is not reproducible (%s): running it again runs the same tests on the same base; create a new task with a command whose test fails", id, t.Reason)
		}
		b := t.Budgets
		b.MaxAttempts = grow(b.MaxAttempts, more.MaxAttempts)
		b.MaxTurns = grow(b.MaxTurns, more.MaxTurns)
		b.MaxTokens = grow(b.MaxTokens, more.MaxTokens)
		b.WallClock = growDuration(b.WallClock, more.WallClock)
		attempts, err := e.Ledger.Attempts(ctx, id)
		if err != nil {
			return err
		}
		u, err := e.usageWith(ctx, id, attempts, time.Now())
		if err != nil {
			return err
		}
		if spent := u.Spent(b); spent != "" {
			return fmt.Errorf("task %s: %s; raise it to resume (--attempts, --turns, --tokens or --wall)", id, spent)
		}
		was := t.Status
		t.Budgets, t.Status, t.Reason = b, engine.TaskQueued, ""
		if err := e.Ledger.UpdateTask(ctx, lease, t); err != nil {
			return err
		}
		out = t
		return e.appendData(ctx, &lease, id, EventResumed, map[string]any{"was": was, "budgets": b})
	})
	return out, err
}

// AcceptOptions are the user's choices when accepting.
type AcceptOptions struct {
	// Force lands a task that is not verified (or whose branch moved
	// since it was); the task.accepted event records it.
	Force bool
	By    string
	// Digest, when set, is the digest of the change the user reviewed
	// (Review.Digest): Accept refuses with engine.ErrStaleDigest, landing
	// nothing, unless the task's change is still that one.
	Digest string
}

// Accepted says what Accept did.
type Accepted struct {
	Method  string   `json:"method"` // "fast-forward" or "cherry-pick"
	Branch  string   `json:"branch"` // the user's branch
	From    string   `json:"from"`
	To      string   `json:"to"`
	Commits []string `json:"commits"`
	Forced  bool     `json:"forced"`
	// Digest is the digest of the change that landed (base..head's
	// canonical diff), as the journal's approval records it.
	Digest string `json:"digest"`
	// Findings are what the commits landed that git acts on (see
	// LandingFindings); only a forced accept lands any.
	Findings []verify.Finding `json:"findings,omitempty"`
}

// ErrLandsHostile: the task's commits would land what git or the kernel
// acts on in a way the diff does not show (links out of the tree,
// attribute drivers, binary files, .gitmodules, nested repositories...:
// verify/tamper.Landing); only --force lands them.
var ErrLandsHostile = errors.New("the task would land files git acts on")

// describeFindings lists findings one per line, for an error a user reads;
// a path or message holding a newline cannot start a line of its own.
func describeFindings(fs []verify.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s %s: %s", f.Code, shown.Line(f.Path), shown.Line(f.Message))
	}
	return b.String()
}

// Accept lands the task's commits on the user's current branch, by
// fast-forward when the branch has not moved since the base, else by
// cherry-pick; it never pushes. Only a verified task whose branch is still
// the verified commit, and whose commits land nothing git acts on
// (LandingFindings), is accepted, unless opts.Force. A working tree with
// uncommitted changes to tracked files (or untracked files the task would
// overwrite) is refused and nothing changes; so is a conflict, after which
// the checkout is as it was.
func (e *Engine) Accept(ctx context.Context, id string, opts AcceptOptions) (*Accepted, error) {
	if opts.Digest != "" {
		if err := CheckDigest(opts.Digest); err != nil {
			return nil, err
		}
	}
	var out *Accepted
	err := e.withLease(ctx, id, func(lease engine.Lease, t *engine.Task) error {
		if Final(t.Status) {
			return fmt.Errorf("task %s is already %s", id, t.Status)
		}
		a := &acceptRun{e: e, id: id, opts: opts, lease: lease, t: t}
		if err := a.readCommits(ctx); err != nil {
			return err
		}
		if err := a.checkReviewed(ctx); err != nil {
			return err
		}
		// What git would act on is listed first, whatever else is wrong:
		// the tree this accept would put on the branch, judged against
		// the tree the branch has.
		var err error
		if a.plan, a.findings, a.applyErr, err = acceptPlan(ctx, a.user, t.Base, a.commits, a.head); err != nil {
			return err
		}
		if err := a.admit(); err != nil {
			return err
		}
		from, err := a.checkCheckout(ctx)
		if err != nil {
			return err
		}
		res, err := a.land(ctx, from)
		if err != nil {
			return err
		}
		if err := a.record(ctx, res); err != nil {
			return err
		}
		out = res
		_, err = e.removeWorktrees(ctx, a.user, id)
		return err
	})
	return out, err
}

// acceptRun is one Accept's state, built up step by step under the task's
// lease: the task's commits, the plan for landing them, and the user's
// branch they land on.
type acceptRun struct {
	e     *Engine
	id    string
	opts  AcceptOptions
	lease engine.Lease
	t     *engine.Task
	user  *git.Repo // the user's checkout (t.Repo)

	commits  []string // the task's commits, oldest first
	head     string   // the task branch's last commit
	digest   string   // the digest of the change base..head (checkReviewed)
	verified bool     // the task is verified, at head

	plan     *landingPlan     // nil when the commits do not apply
	findings []verify.Finding // what the landing would put there that git acts on
	applyErr error            // why the commits do not apply to the branch

	branch string // the user's branch, which the commits land on
}

// readCommits opens the user's checkout and reads the task's commits, and
// whether the last one is the one verified.
func (a *acceptRun) readCommits(ctx context.Context) error {
	var err error
	if a.user, err = git.Open(ctx, a.t.Repo); err != nil {
		return err
	}
	events, err := a.e.Ledger.Events(ctx, a.id, 0, 0)
	if err != nil {
		return err
	}
	if a.commits, err = branchCommits(ctx, a.user, a.t); err != nil {
		return err
	}
	if len(a.commits) == 0 {
		return fmt.Errorf("task %s has no commits to accept", a.id)
	}
	a.head = a.commits[len(a.commits)-1]
	a.verified = a.t.Status == engine.TaskVerified && verifiedHead(events) == a.head
	return nil
}

// admit refuses, unless forced, a task that is not verified at its head or
// whose landing has findings; the findings are listed either way.
func (a *acceptRun) admit() error {
	if a.opts.Force {
		return nil
	}
	if !a.verified {
		why := a.notVerifiedWhy()
		if len(a.findings) > 0 {
			return fmt.Errorf("task %s: %w:%s\nand it is not verified (%s): only a verified task is accepted; --force lands it anyway and records that", a.id, ErrLandsHostile, describeFindings(a.findings), why)
		}
		return fmt.Errorf("task %s is not verified (%s): only a verified task is accepted; --force lands it anyway and records that", a.id, why)
	}
	if len(a.findings) > 0 {
		return fmt.Errorf("task %s: %w:%s\nlook at them (bcode task diff %s); --force lands them anyway and records that", a.id, ErrLandsHostile, describeFindings(a.findings), a.id)
	}
	return nil
}

// notVerifiedWhy says why a task that is not verified at its head is not:
// its status (and last verdict), or a branch that moved after the check.
func (a *acceptRun) notVerifiedWhy() string {
	if a.t.Status == engine.TaskVerified {
		return "its branch moved after the verified check"
	}
	why := fmt.Sprintf("its status is %s", a.t.Status)
	if a.t.Verdict != "" {
		why += fmt.Sprintf(", last verdict %s", a.t.Verdict)
	}
	return why
}

// checkCheckout makes sure the user's checkout can take the commits: it is
// on a branch other than the task's, the commits apply, the working tree
// is clean, and the branch is still the commit the plan was made from,
// which it returns.
func (a *acceptRun) checkCheckout(ctx context.Context) (from string, err error) {
	cur, err := a.user.Git(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return "", errors.New("your checkout is on a detached HEAD: check out the branch to land the task on")
	}
	a.branch = strings.TrimSpace(string(cur))
	if a.branch == a.t.Branch {
		return "", fmt.Errorf("your checkout is on the task branch %s itself: check out the branch to land it on", a.t.Branch)
	}
	if a.applyErr != nil {
		return "", fmt.Errorf("%w; nothing changed: rebase the task or land it by hand from %s", a.applyErr, a.t.Branch)
	}
	if err := checkClean(ctx, a.user, a.t, a.head); err != nil {
		return "", err
	}
	fromOut, err := a.user.Git(ctx, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	from = strings.TrimSpace(string(fromOut))
	if from != a.plan.From {
		return "", fmt.Errorf("your branch %s moved while accepting (%.12s, was %.12s): accept again; nothing changed", a.branch, from, a.plan.From)
	}
	return from, nil
}

// land puts the commits on the user's branch, which holds from, the way
// the plan says, and reports what it did. Forced is set when the task was
// not verified or the landing has findings.
func (a *acceptRun) land(ctx context.Context, from string) (*Accepted, error) {
	res := &Accepted{Branch: a.branch, From: from, Commits: a.commits, Forced: !a.verified || len(a.findings) > 0, Findings: a.findings, Digest: a.digest}
	switch a.plan.Method {
	case MethodAlreadyLanded:
		res.Method, res.To = a.plan.Method, from // an accept that died before recording it
	case MethodFastForward:
		res.Method = MethodFastForward
		if err := a.fastForward(ctx, from); err != nil {
			return nil, err
		}
	default:
		res.Method = MethodCherryPick
		findings, err := a.cherryPick(ctx)
		if err != nil {
			return nil, err
		}
		res.Forced = res.Forced || len(findings) > 0
		res.Findings = findings
	}
	if res.To == "" {
		toOut, err := a.user.Git(ctx, "rev-parse", "--verify", "HEAD")
		if err != nil {
			return nil, err
		}
		res.To = strings.TrimSpace(string(toOut))
	}
	return res, nil
}

// fastForward moves the user's branch from from to the task's head.
// Plumbing, not `git merge`: a two-tree read-tree updates the index and
// files (refusing to overwrite anything untracked) without reading
// .gitmodules, so no entry in it can make the landing fail.
func (a *acceptRun) fastForward(ctx context.Context, from string) error {
	if _, err := a.user.Git(ctx, "read-tree", "-m", "-u", "HEAD", a.head); err != nil {
		return fmt.Errorf("fast-forwarding %s: %w", a.branch, err)
	}
	if _, err := a.user.Git(ctx, "update-ref", "-m", "bcode: accept task "+a.id, "refs/heads/"+a.branch, a.head, from); err != nil {
		return fmt.Errorf("fast-forwarding %s: %w", a.branch, err)
	}
	return nil
}

// cherryPick applies the task's commits onto the user's branch, aborting
// on a conflict, and returns the findings of the tree it landed
// (checkLanded: the judged tree, or the landing undone).
func (a *acceptRun) cherryPick(ctx context.Context) ([]verify.Finding, error) {
	args := append(append([]string(nil), identity...), "cherry-pick", "--allow-empty", "--keep-redundant-commits", a.t.Base+".."+"refs/heads/"+a.t.Branch)
	if _, err := a.user.Git(ctx, args...); err != nil {
		a.user.Git(context.WithoutCancel(ctx), "cherry-pick", "--abort")
		return nil, fmt.Errorf("the task's commits do not apply to %s (%v); nothing changed: rebase the task or land it by hand from %s", a.branch, err, a.t.Branch)
	}
	return checkLanded(ctx, a.user, a.plan, a.branch, a.opts.Force)
}

// record writes the task.accepted event and marks the task accepted, with
// a reason when it was forced.
func (a *acceptRun) record(ctx context.Context, res *Accepted) error {
	data := map[string]any{
		"force": res.Forced, "findings": res.Findings, "by": a.opts.By, "method": res.Method, "branch": a.branch,
		"from": res.From, "to": res.To, "commits": a.commits, "verdict": a.t.Verdict, "digest": a.digest}
	claims, err := a.acceptClaims(data)
	if err != nil {
		return err
	}
	if err := a.e.appendClaimed(ctx, &a.lease, a.id, EventAccepted, data, claims...); err != nil {
		return err
	}
	a.t.Status = engine.TaskAccepted
	switch {
	case !a.verified:
		a.t.Reason = "accepted with --force by " + a.opts.By + " (not verified)"
	case len(res.Findings) > 0:
		a.t.Reason = fmt.Sprintf("accepted with --force by %s (landed %d file(s) git acts on)", a.opts.By, len(res.Findings))
	}
	return a.e.Ledger.UpdateTask(ctx, a.lease, a.t)
}

// checkClean refuses a checkout with staged or unstaged changes to tracked
// files, or with untracked files at paths the task's commits write.
func checkClean(ctx context.Context, user *git.Repo, t *engine.Task, head string) error {
	out, err := user.Git(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=all")
	if err != nil {
		return err
	}
	var dirty, untracked []string
	recs := strings.Split(string(out), "\x00")
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		if len(r) < 4 {
			continue
		}
		code, p := r[:2], r[3:]
		if code[0] == 'R' || code[0] == 'C' {
			i++ // the source path follows
		}
		if code == "??" {
			untracked = append(untracked, p)
		} else {
			dirty = append(dirty, p)
		}
	}
	if len(dirty) > 0 {
		return fmt.Errorf("your working tree has uncommitted changes (%s): commit or stash them, then accept again; nothing was changed", strings.Join(first(dirty, 5), ", "))
	}
	if len(untracked) > 0 {
		files, err := changedFiles(ctx, user, t.Base, head)
		if err != nil {
			return err
		}
		touched := map[string]bool{}
		for _, f := range files {
			touched[f] = true
		}
		var clash []string
		for _, u := range untracked {
			if touched[u] {
				clash = append(clash, u)
			}
		}
		if len(clash) > 0 {
			return fmt.Errorf("untracked files in your working tree would be overwritten by the task (%s): move them away, then accept again; nothing was changed", strings.Join(first(clash, 5), ", "))
		}
	}
	return nil
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// Rejected says what Reject removed.
type Rejected struct {
	Worktrees []string `json:"worktrees"`
	Branch    string   `json:"branch,omitempty"`
	Head      string   `json:"head,omitempty"` // the deleted branch's last commit
}

// Reject throws the task's work away: its worktrees and its branch are
// removed, the ledger record stays (status rejected, with the deleted
// branch's last commit in the task.rejected event).
func (e *Engine) Reject(ctx context.Context, id, by string) (*Rejected, error) {
	var out *Rejected
	// The worktrees go without being read: what the agent left there
	// cannot stop a reject.
	err := e.withLeaseFor(ctx, id, true, func(lease engine.Lease, t *engine.Task) error {
		switch t.Status {
		case engine.TaskAccepted:
			return fmt.Errorf("task %s is accepted: its commits are on your branch (revert them with git)", id)
		case engine.TaskRejected:
			return fmt.Errorf("task %s is already rejected", id)
		}
		user, err := git.Open(ctx, t.Repo)
		if err != nil {
			return err
		}
		res := &Rejected{}
		if res.Worktrees, err = e.removeWorktrees(ctx, user, id); err != nil {
			return err
		}
		if h, err := user.Git(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+t.Branch); err == nil {
			res.Head, res.Branch = strings.TrimSpace(string(h)), t.Branch
			if _, err := user.Git(ctx, "branch", "-D", "--", t.Branch); err != nil {
				return fmt.Errorf("deleting %s: %w", t.Branch, err)
			}
		}
		if res.Worktrees == nil {
			res.Worktrees = []string{}
		}
		data := map[string]any{"by": by, "worktrees": res.Worktrees, "branch": res.Branch, "head": res.Head}
		rejection, err := newClaim(engine.ClaimRejection, id, data)
		if err != nil {
			return err
		}
		if err := e.appendClaimed(ctx, &lease, id, EventRejected, data, rejection); err != nil {
			return err
		}
		t.Status, t.Reason = engine.TaskRejected, "rejected by "+by
		out = res
		return e.Ledger.UpdateTask(ctx, lease, t)
	})
	return out, err
}

// grow and growDuration raise a budget by more, stopping at the largest
// value: a sum that wrapped negative would read as "no limit" and the task
// would never be parked.
func grow(budget, more int) int {
	if more > 0 && budget > math.MaxInt-more {
		return math.MaxInt
	}
	return budget + more
}

func growDuration(budget, more time.Duration) time.Duration {
	if more > 0 && budget > math.MaxInt64-more {
		return math.MaxInt64
	}
	return budget + more
}

// StartFailure is why a run of a task could not start, as the
// task.start_failed event records it: what is missing and the command
// that fixes it.
type StartFailure struct {
	// Missing names what the run needs and did not find: "model",
	// "docker", "image", "agent" or "setup" (anything else: a broken
	// config, an unreadable repository).
	Missing string `json:"missing"`
	Reason  string `json:"reason"`
	// Fix is the command (or step) that provides it; "" when there is no
	// one command.
	Fix string `json:"fix,omitempty"`
}

// RecordStartFailure records that a run of task id could not start: a
// task.start_failed event and, while the task is queued, the reason on the
// task ("could not start: ..."), which the next run clears. A task a live
// runner holds is left alone: it did start, elsewhere.
func (e *Engine) RecordStartFailure(ctx context.Context, id string, f StartFailure) error {
	t, err := e.Ledger.Task(ctx, id)
	if err != nil {
		return err
	}
	if t.Status != engine.TaskQueued {
		// Its status and reason stay what its last run left; the event
		// says why this run did not start.
		return e.appendData(ctx, nil, id, EventStartFailed, f)
	}
	err = e.withLease(ctx, id, func(lease engine.Lease, t *engine.Task) error {
		if t.Status == engine.TaskQueued {
			t.Reason = "could not start: " + f.Reason
			if err := e.Ledger.UpdateTask(ctx, lease, t); err != nil {
				return err
			}
		}
		return e.appendData(ctx, &lease, id, EventStartFailed, f)
	})
	if errors.Is(err, ErrRunning) {
		return nil
	}
	return err
}
