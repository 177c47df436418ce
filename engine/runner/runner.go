// Package runner drives a task: it claims the task's lease (recovering
// from a dead runner), keeps it alive with heartbeats, works in a worktree of
// the task branch under the state dir, and runs attempts: build context, let
// the agent take turns, commit a checkpoint after every turn that changed
// files, check the result against the base with the gate, and record the
// verdict. Budgets park the task as blocked; a cancel request, SIGINT or
// SIGTERM end the current step cleanly; a takeover by another runner stops
// this one before it writes anything more.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/runner/crashpoint"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// Runner runs tasks. Engine, Agent and Checker are required.
type Runner struct {
	Engine  *task.Engine
	Agent   Agent
	Checker Checker
	// Context builds each attempt's context pack; nil: attempts start
	// without one.
	Context ContextBuilder
	// Holder is who this runner is; zero: this process.
	Holder ledger.Holder
	// OnEvent is called after each event this runner appended is on disk.
	OnEvent func(engine.Event)
	// CleanupTimeout bounds the clean stop after a cancel or a signal;
	// zero: 30s.
	CleanupTimeout time.Duration
	// Endpoint names the model endpoint the agent's sessions use (its
	// URL). When set, every attempt's agent session holds one of the
	// endpoint's session slots in the ledger (ledger.Store.AcquireSession)
	// and waits for one while all are taken: the runners sharing a
	// llama-server share its GPU by the limit recorded there.
	Endpoint string
	// SessionPoll is how often a runner waiting for a session slot asks
	// again; zero: 250ms.
	SessionPoll time.Duration
	// Config is the task's base commit's configuration, read once by
	// whoever built the runner (ForTask, which gives the same to the
	// gate); nil: the run reads it once as it starts. The worktree and
	// the checkpoints take their caps from it.
	Config *config.Config

	readEvents eventReader // nil: Engine.Ledger
}

// Result is how a run ended.
type Result struct {
	Task     engine.Task    `json:"task"`
	Fence    int64          `json:"fence"`
	Worktree string         `json:"worktree"`
	Recovery *task.Recovery `json:"recovery,omitempty"`
}

// Errors Run returns that callers tell apart.
var (
	// ErrNotRunnable: the task's status does not allow a run.
	ErrNotRunnable = errors.New("task is not runnable")
	// ErrStopped: a signal (the parent context) stopped the run; the task
	// was left blocked with a task.interrupted event and can be resumed.
	ErrStopped = errors.New("run stopped")
)

// stop causes, for the work context.
var (
	errCancelRequested = errors.New("cancel requested")
	errLeaseLost       = errors.New("lease lost")
)

// run is one Run's state.
type run struct {
	r *Runner
	// id, fence, owner and pid are the lease's, fixed for the run; lease
	// itself is renewed by the heartbeat, so it is read under leaseMu.
	id       string
	fence    int64
	owner    string
	pid      int
	lease    engine.Lease
	leaseMu  sync.Mutex
	t        *engine.Task
	wt       *git.Repo
	limits   git.Limits // what a checkpoint takes in (the base's task caps)
	phase    string
	attempt  *engine.Attempt
	turn     int
	recorded int // the last turn whose event is written
	startSeq int64
	cancelBy string
	// turns is the task's turn usage from the events up to turnsSeq,
	// kept up to date so each turn reads only the events since.
	turns    task.Usage
	turnsSeq int64
	// oracle is the task's pinned oracle (reproduce), nil without one.
	oracle *engine.Oracle
}

// eventReader is the ledger's read of a task's events.
type eventReader interface {
	Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error)
}

// events is where the run reads its task's events: the ledger, or a
// test's counting reader.
func (r *Runner) events() eventReader {
	if r.readEvents != nil {
		return r.readEvents
	}
	return r.Engine.Ledger
}

// Run claims the task and works on it until it is verified, parked as
// blocked (or failed), cancelled, stopped by ctx (SIGINT/SIGTERM), or taken
// over. A queued task and one left running by a dead runner can be run;
// anything else is ErrNotRunnable (resume it first).
func (r *Runner) Run(ctx context.Context, taskID string) (*Result, error) {
	if r.Engine == nil || r.Agent == nil || r.Checker == nil {
		return nil, errors.New("runner: Engine, Agent and Checker are required")
	}
	t, err := r.Engine.Ledger.Task(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if t.Status != engine.TaskQueued && t.Status != engine.TaskRunning {
		return nil, fmt.Errorf("%w: task %s is %s (resume it with bcode task resume %s)", ErrNotRunnable, taskID, t.Status, taskID)
	}
	holder := r.holder()
	// Cancel requests count from here: an older one was for a run that
	// has ended.
	before, err := r.events().Events(ctx, taskID, 0, 0)
	if err != nil {
		return nil, err
	}
	var startSeq int64
	if n := len(before); n > 0 {
		startSeq = before[n-1].Seq
	}
	lease, rec, err := r.Engine.Claim(ctx, taskID, holder)
	if err != nil {
		return nil, err
	}
	return r.start(ctx, lease, rec, startSeq, before)
}

// RunNext claims the oldest runnable task in the ledger (queued, or left
// running by a runner that died or stalled past its TTL) and runs it as
// Run does. With nothing to claim it returns ledger.ErrNothingRunnable.
// Several runners, on one machine or many, may call it on one shared
// ledger: each task is claimed by one of them.
func (r *Runner) RunNext(ctx context.Context) (*Result, error) {
	if r.Engine == nil || r.Agent == nil || r.Checker == nil {
		return nil, errors.New("runner: Engine, Agent and Checker are required")
	}
	lease, rec, err := r.Engine.ClaimNext(ctx, r.holder())
	if err != nil {
		return nil, err
	}
	return r.RunClaimed(ctx, lease, rec)
}

// RunClaimed runs a task whose lease the caller has claimed (with
// task.Engine.Claim or ClaimNext, as r.Holder) until it ends as Run does.
// The lease is released when it ends, as in Run.
func (r *Runner) RunClaimed(ctx context.Context, lease engine.Lease, rec *task.Recovery) (*Result, error) {
	if r.Engine == nil || r.Agent == nil || r.Checker == nil {
		r.Engine.Ledger.Release(context.WithoutCancel(ctx), lease)
		return nil, errors.New("runner: Engine, Agent and Checker are required")
	}
	// Cancel requests count from the last event an earlier holder wrote:
	// this run's own (the recovery) carry its fence.
	evs, err := r.events().Events(ctx, lease.TaskID, 0, 0)
	if err != nil {
		r.Engine.Ledger.Release(context.WithoutCancel(ctx), lease)
		return nil, err
	}
	var startSeq int64
	before := evs
	for i, ev := range evs {
		if ev.Fence != lease.Fence {
			startSeq = ev.Seq
			before = evs[:i+1]
		}
	}
	return r.start(ctx, lease, rec, startSeq, before)
}

func (r *Runner) holder() ledger.Holder {
	if r.Holder.Owner == "" {
		return ledger.LocalHolder("")
	}
	return r.Holder
}

// start runs a claimed lease. before is the task's log up to startSeq,
// read once here: from then on usage grows by what each turn adds.
func (r *Runner) start(ctx context.Context, lease engine.Lease, rec *task.Recovery, startSeq int64, before []engine.Event) (*Result, error) {
	s := &run{r: r, id: lease.TaskID, fence: lease.Fence, owner: lease.Owner, pid: lease.PID,
		lease: lease, phase: "starting", startSeq: startSeq, turnsSeq: startSeq}
	// This one read of the whole log is the run's; from here on usage
	// grows by the events each turn adds.
	s.turns.AddTurns(before)
	if err := s.announceRecovery(ctx); err != nil {
		return nil, err
	}
	res, err := s.work(ctx)
	if res != nil {
		res.Recovery = rec
	}
	return res, err
}

func (s *run) announceRecovery(ctx context.Context) error {
	if s.r.OnEvent == nil {
		return nil
	}
	evs, err := s.r.Engine.Ledger.Events(ctx, s.id, 0, 0)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.Fence == s.fence {
			s.r.OnEvent(ev)
		}
	}
	return nil
}

func (s *run) curLease() engine.Lease {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	return s.lease
}

// emit appends an event under the lease and reports it once durable.
func (s *run) emit(ctx context.Context, kind engine.EventKind, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	ev := &engine.Event{TaskID: s.id, Kind: kind, Data: raw}
	if s.attempt != nil {
		ev.Attempt = s.attempt.ID
	}
	lease := s.curLease()
	if _, err := s.r.Engine.Ledger.Append(ctx, &lease, ev); err != nil {
		return err
	}
	if s.r.OnEvent != nil {
		s.r.OnEvent(*ev)
	}
	return nil
}

func (s *run) setTask(ctx context.Context, status engine.TaskStatus, reason string) error {
	s.t.Status, s.t.Reason = status, reason
	return s.r.Engine.Ledger.UpdateTask(ctx, s.curLease(), s.t)
}

func (s *run) work(parent context.Context) (*Result, error) {
	led := s.r.Engine.Ledger
	ctx, stop := context.WithCancelCause(parent)
	defer stop(nil)
	var err error
	if s.t, err = led.Task(ctx, s.id); err != nil {
		led.Release(context.WithoutCancel(parent), s.curLease())
		return nil, err
	}
	hbDone := make(chan struct{})
	go s.heartbeat(ctx, stop, hbDone)
	defer func() { stop(nil); <-hbDone }()

	res := &Result{Fence: s.fence}
	err = s.attempts(ctx, res)
	if cause := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return s.stopped(parent, ctx, cause, res)
	}
	if errors.Is(err, engine.ErrFenced) {
		return res, fmt.Errorf("task %s was taken over by another runner; this one stopped: %w", s.id, err)
	}
	if errors.Is(err, ledger.ErrUnavailable) {
		// The ledger stayed unreachable for as long as the call was
		// retried: nothing can be recorded, so nothing is (no "failed"
		// for an outage); the lease goes stale and the next holder —
		// this runner's worker, or another — recovers the task.
		return res, fmt.Errorf("task %s: %w; this runner stopped without writing, and the task is taken over once its lease expires", s.id, err)
	}
	if err != nil {
		// An error the runner cannot handle: record it, park the task
		// as failed, release the lease.
		cctx := context.WithoutCancel(parent)
		s.finishAttempt(cctx, engine.AttemptInterrupted, "", err.Error())
		if s.setTask(cctx, engine.TaskFailed, err.Error()) == nil {
			s.emit(cctx, task.EventFailed, map[string]any{"reason": err.Error(), "phase": s.phase})
		}
		s.release(cctx)
		res.Task = *s.t
		return res, err
	}
	crashpoint.Hit("task.before-release")
	s.release(context.WithoutCancel(parent))
	res.Task = *s.t
	return res, nil
}

func (s *run) release(ctx context.Context) {
	s.r.Engine.Ledger.Release(ctx, s.curLease())
}

// heartbeat renews the lease every TTL/3 and, on the same beat, looks for
// a cancel request: so a cancel stops the run within one heartbeat. A
// fenced-out heartbeat stops the run at once; one that fails otherwise is
// retried until the lease would have expired.
func (s *run) heartbeat(ctx context.Context, stop context.CancelCauseFunc, done chan<- struct{}) {
	defer close(done)
	ttl := s.r.Engine.TTL
	if ttl <= 0 {
		ttl = task.DefaultTTL
	}
	every := ttl / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	led := s.r.Engine.Ledger
	// The beat reads only what was appended since the last beat: a cancel
	// request is looked for once, however long the run.
	seen := s.startSeq
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur := s.curLease()
		l, err := led.Heartbeat(ctx, cur, ttl)
		switch {
		case errors.Is(err, engine.ErrFenced):
			stop(fmt.Errorf("%w: %w", errLeaseLost, err))
			return
		case err != nil:
			if time.Now().After(cur.Expires) {
				stop(fmt.Errorf("%w: heartbeats failed until the lease expired: %w", errLeaseLost, err))
				return
			}
		default:
			s.leaseMu.Lock()
			s.lease = l
			s.leaseMu.Unlock()
		}
		evs, err := s.r.events().Events(ctx, cur.TaskID, seen, 0)
		if err != nil {
			continue
		}
		for _, ev := range evs {
			seen = ev.Seq
			if ev.Kind == task.EventCancelRequested {
				var d struct {
					By string `json:"by"`
				}
				json.Unmarshal(ev.Data, &d)
				s.cancelBy = d.By
				stop(errCancelRequested)
				return
			}
		}
	}
}

// attempts is the attempt loop.
func (s *run) attempts(ctx context.Context, res *Result) error {
	led := s.r.Engine.Ledger
	if err := s.setTask(ctx, engine.TaskRunning, ""); err != nil {
		return err
	}
	wtPath := s.r.Engine.WorktreePath(s.t.ID, s.fence)
	if err := s.emit(ctx, task.EventStarted, map[string]any{"owner": s.owner, "pid": s.pid, "fence": s.fence, "worktree": wtPath}); err != nil {
		return err
	}
	if rc, ok := s.r.Agent.(Recoverer); ok {
		s.phase = "cleaning up after earlier runners"
		n, err := rc.Recover(ctx, *s.t, s.curLease())
		if err != nil {
			return fmt.Errorf("cleaning up what an earlier runner of task %s left: %w", s.t.ID, err)
		}
		if n > 0 {
			if err := s.emit(ctx, task.EventReaped, map[string]any{"removed": n}); err != nil {
				return err
			}
		}
	}
	s.phase = "preparing the worktree"
	cfg, err := s.baseConfig(ctx)
	if err != nil {
		return err
	}
	s.limits = task.Limits(cfg)
	if done, err := s.reproduce(ctx, cfg); err != nil || done {
		return err
	}
	wt, err := s.r.Engine.PrepareWorktree(ctx, s.t, s.curLease(), s.limits)
	if err != nil {
		return err
	}
	s.wt, res.Worktree = wt, wt.Dir
	for {
		spent, err := s.spent(ctx)
		if err != nil {
			return err
		}
		if spent != "" {
			return s.park(ctx, engine.TaskBlocked, spent)
		}
		history, err := led.Attempts(ctx, s.t.ID)
		if err != nil {
			return err
		}
		s.phase = "starting an attempt"
		if s.attempt, err = led.StartAttempt(ctx, s.curLease(), s.t.ID); err != nil {
			return err
		}
		s.turn, s.recorded = 0, 0
		if err := s.emit(ctx, task.EventAttemptStarted, map[string]any{"number": s.attempt.Number}); err != nil {
			return err
		}
		crashpoint.Hit("attempt.started")
		outcome, err := s.oneAttempt(ctx, history)
		if err != nil {
			return err
		}
		switch outcome.status {
		case engine.TaskVerified:
			s.t.Verdict = outcome.verdict
			if err := s.setTask(ctx, engine.TaskVerified, ""); err != nil {
				return err
			}
			return s.emit(ctx, task.EventVerified, map[string]any{"head": outcome.head})
		case engine.TaskBlocked:
			s.t.Verdict = outcome.verdict
			return s.park(ctx, engine.TaskBlocked, outcome.reason)
		}
		s.t.Verdict = outcome.verdict // not verified: next attempt
	}
}

// baseConfig is Runner.Config, or the task's base configuration read
// here, once for the run.
func (s *run) baseConfig(ctx context.Context) (config.Config, error) {
	if s.r.Config != nil {
		return *s.r.Config, nil
	}
	user, err := git.Open(ctx, s.t.Repo)
	if err != nil {
		return config.Config{}, fmt.Errorf("task %s: its repository: %w", s.t.ID, err)
	}
	return task.BaseConfig(ctx, user, s.t.Base)
}

func (s *run) park(ctx context.Context, status engine.TaskStatus, reason string) error {
	if err := s.setTask(ctx, status, reason); err != nil {
		return err
	}
	return s.emit(ctx, task.EventBlocked, map[string]any{"reason": reason})
}

func (s *run) spent(ctx context.Context) (string, error) {
	led := s.r.Engine.Ledger
	atts, err := led.Attempts(ctx, s.t.ID)
	if err != nil {
		return "", err
	}
	evs, err := s.r.events().Events(ctx, s.t.ID, s.turnsSeq, 0)
	if err != nil {
		return "", err
	}
	s.turns.AddTurns(evs)
	if n := len(evs); n > 0 {
		s.turnsSeq = evs[n-1].Seq
	}
	u := task.UsageOf(atts, nil, time.Now())
	u.Turns, u.Tokens = s.turns.Turns, s.turns.Tokens
	return u.Spent(s.t.Budgets), nil
}

type outcome struct {
	status  engine.TaskStatus // verified, blocked, or "" (try again)
	verdict string
	reason  string
	head    string
}

func (s *run) oneAttempt(ctx context.Context, history []engine.Attempt) (outcome, error) {
	in := AttemptInput{Task: *s.t, Attempt: *s.attempt, Worktree: s.wt.Dir, History: history, Lease: s.curLease(),
		Ledger: s.r.Engine.Ledger}
	if s.r.Context != nil {
		s.phase = "building context"
		p, err := s.r.Context.Build(ctx, *s.t, s.wt.Dir)
		if err != nil {
			return outcome{}, err
		}
		in.Pack = p
		if err := s.emit(ctx, task.EventContextBuilt, map[string]any{"tokens": p.Total, "budget": p.Budget, "sections": len(p.Sections), "files": len(p.Files())}); err != nil {
			return outcome{}, err
		}
	}
	release, err := s.sessionSlot(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer release()
	s.phase = "agent turns"
	sess, err := s.r.Agent.StartAttempt(ctx, in)
	if err != nil {
		return outcome{}, fmt.Errorf("starting the agent: %w", err)
	}
	defer sess.Close()
	var note string
	for {
		spent, err := s.spent(ctx)
		if err != nil {
			return outcome{}, err
		}
		if spent != "" {
			if err := s.finishAttempt(ctx, engine.AttemptFinished, "", spent); err != nil {
				return outcome{}, err
			}
			return outcome{status: engine.TaskBlocked, verdict: s.t.Verdict, reason: spent}, nil
		}
		s.turn++
		tr, err := sess.Turn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return outcome{}, err
			}
			reason := fmt.Sprintf("the agent failed in turn %d: %v", s.turn, err)
			if ferr := s.checkpoint(ctx, TurnResult{Summary: "agent error"}, false); ferr != nil {
				return outcome{}, ferr
			}
			if ferr := s.finishAttempt(ctx, engine.AttemptFinished, engine.AttemptAgentFailed, reason); ferr != nil {
				return outcome{}, ferr
			}
			return outcome{status: engine.TaskBlocked, verdict: s.t.Verdict, reason: reason}, nil
		}
		if tr.Note != "" {
			note = tr.Note
		}
		if err := s.checkpoint(ctx, tr, false); err != nil {
			return outcome{}, err
		}
		if tr.Stuck {
			reason := "the agent is stuck"
			if tr.Note != "" {
				reason += ": " + tr.Note
			}
			if err := s.finishAttempt(ctx, engine.AttemptFinished, engine.AttemptStuck, note); err != nil {
				return outcome{}, err
			}
			return outcome{status: engine.TaskBlocked, verdict: s.t.Verdict, reason: reason}, nil
		}
		if tr.Done {
			break
		}
	}
	return s.check(ctx, note)
}

// checkpoint commits what the turn changed, if anything, and records the
// turn with its commit in one event. The commit's trailers name the task,
// attempt, turn and fence, so if this process dies between the commit and
// the event, the next holder finds the commit on the branch and adopts it
// instead of doing the turn again.
func (s *run) checkpoint(ctx context.Context, tr TurnResult, interrupted bool) error {
	subject := fmt.Sprintf("bcode: task %s attempt %d turn %d", s.t.ID, s.attempt.Number, s.turn)
	if sum := oneLine(tr.Summary); sum != "" {
		subject += ": " + sum
	}
	// A commit that has begun finishes even when ctx ends: stopping
	// between staging and moving the branch would only leave work for
	// the next holder's recovery.
	cctx := context.WithoutCancel(ctx)
	cp, err := task.Commit(cctx, s.wt, s.t.Branch, subject,
		task.Trailers{Task: s.t.ID, Attempt: s.attempt.Number, Turn: s.turn, Fence: s.fence}, s.limits)
	if err != nil {
		return err
	}
	commit, parent := cp.Commit, cp.Parent
	if commit != "" {
		crashpoint.Hit("checkpoint.before-event")
	}
	d := task.TurnData{Turn: s.turn, Summary: tr.Summary, Tokens: tr.TokensUsed, Changed: commit != "", Done: tr.Done, Stuck: tr.Stuck}
	data := struct {
		task.TurnData
		Commit      string        `json:"commit,omitempty"`
		Parent      string        `json:"parent,omitempty"`
		Interrupted bool          `json:"interrupted,omitempty"`
		Skipped     []git.Skipped `json:"skipped,omitempty"`
	}{d, commit, parent, interrupted, cp.Skipped}
	if commit == "" {
		data.Parent = ""
	}
	if err := s.emit(cctx, task.EventTurn, data); err != nil {
		return err
	}
	s.recorded = s.turn
	if commit != "" {
		crashpoint.Hit("checkpoint.after-event")
	}
	return nil
}

func (s *run) check(ctx context.Context, note string) (outcome, error) {
	s.phase = "check"
	out, err := s.wt.Git(ctx, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return outcome{}, err
	}
	head := strings.TrimSpace(string(out))
	if same, err := s.unchanged(ctx, head); err != nil {
		return outcome{}, err
	} else if same {
		return s.noChange(ctx, head)
	}
	if err := s.emit(ctx, task.EventCheckStarted, map[string]any{"head": head}); err != nil {
		return outcome{}, err
	}
	rep, err := s.r.Checker.Check(ctx, CheckInput{Worktree: s.wt.Dir, Repo: s.t.Repo, Head: head, Base: s.t.Base, TaskID: s.t.ID,
		Attempt: s.attempt.ID, Number: s.attempt.Number, Fence: s.fence, Oracle: s.oracle})
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, err
		}
		return outcome{}, fmt.Errorf("checking attempt %d: %w", s.attempt.Number, err)
	}
	crashpoint.Hit("check.before-verdict")
	reasons := make([]verify.Reason, 0, len(rep.Reasons))
	reasons = append(reasons, rep.Reasons...)
	if err := s.emit(ctx, task.EventCheckFinished, map[string]any{"head": head, "verdict": rep.Verdict, "reasons": reasons,
		"level": rep.Level, "level_required": rep.LevelRequired, "level_missing": rep.LevelMissing}); err != nil {
		return outcome{}, err
	}
	verdict := engine.AttemptVerdict(rep.Verdict)
	if note == "" {
		note = reasonText(reasons)
	}
	crashpoint.Hit("attempt.before-finish")
	if err := s.finishAttempt(ctx, engine.AttemptFinished, verdict, note); err != nil {
		return outcome{}, err
	}
	o := outcome{verdict: string(rep.Verdict), head: head}
	switch rep.Verdict {
	case verify.Verified:
		o.status = engine.TaskVerified
	case verify.Error:
		// The gate could not decide (environment, configuration): the
		// agent cannot fix that, the user can.
		o.status, o.reason = engine.TaskBlocked, "the check could not decide: "+reasonText(reasons)
	}
	return o, nil
}

// unchanged reports whether head's tree is the base's: the agent changed
// nothing, so there is nothing for the gate to check. The user's
// repository answers (the worktree's .git is the agent's to point
// anywhere).
func (s *run) unchanged(ctx context.Context, head string) (bool, error) {
	repo, err := git.Open(ctx, s.t.Repo)
	if err != nil {
		return false, err
	}
	diff, err := repo.DiffTree(ctx, s.t.Base, head)
	if err != nil {
		return false, err
	}
	return len(diff) == 0, nil
}

// noChange ends an attempt whose agent finished without changing a file:
// recorded as such (attempt.no_change, verdict no_change), with a note the
// next attempt's prompt shows, and the task goes on to that attempt. The
// gate is not asked: its "nothing to check" advice is for `bcode check`.
func (s *run) noChange(ctx context.Context, head string) (outcome, error) {
	if err := s.emit(ctx, task.EventNoChange, map[string]any{"number": s.attempt.Number, "head": head}); err != nil {
		return outcome{}, err
	}
	note := fmt.Sprintf("attempt %d finished without changing any file: the task branch is still its base, so nothing was checked; this attempt must edit the code (and add a test that shows the change) before it finishes", s.attempt.Number)
	if err := s.finishAttempt(ctx, engine.AttemptFinished, engine.AttemptNoChange, note); err != nil {
		return outcome{}, err
	}
	return outcome{verdict: string(engine.AttemptNoChange), head: head}, nil
}

func (s *run) finishAttempt(ctx context.Context, status engine.AttemptStatus, verdict engine.AttemptVerdict, note string) error {
	if s.attempt == nil || s.attempt.Status != engine.AttemptRunning {
		return nil
	}
	s.attempt.Status, s.attempt.Verdict, s.attempt.Note = status, verdict, note
	if err := s.r.Engine.Ledger.FinishAttempt(ctx, s.curLease(), s.attempt); err != nil {
		return err
	}
	return s.emit(ctx, task.EventAttemptFinished, map[string]any{"number": s.attempt.Number, "status": status, "verdict": verdict, "note": note})
}

// stopped ends a run whose work context ended: a takeover writes nothing
// more; a cancel request or a signal commits what the current step changed,
// closes the attempt as interrupted, records why and releases the lease.
func (s *run) stopped(parent, ctx context.Context, cause error, res *Result) (*Result, error) {
	if errors.Is(cause, errLeaseLost) {
		return res, fmt.Errorf("task %s: %w; this runner stopped without writing", s.id, cause)
	}
	timeout := s.r.CleanupTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(parent), timeout)
	defer cancel()
	phase := s.phase
	var errs []error
	if s.wt != nil && s.attempt != nil && s.attempt.Status == engine.AttemptRunning {
		if s.recorded == s.turn {
			s.turn++ // the current turn is recorded: what changed since is the next one's
		}
		errs = append(errs, s.checkpoint(cctx, TurnResult{Summary: "interrupted: " + cause.Error()}, true))
		errs = append(errs, s.finishAttempt(cctx, engine.AttemptInterrupted, "", "interrupted in "+phase+": "+cause.Error()))
	}
	var head string
	if s.wt != nil {
		if out, err := s.wt.Git(cctx, "rev-parse", "--verify", "HEAD"); err == nil {
			head = strings.TrimSpace(string(out))
		}
	}
	var runErr error
	if errors.Is(cause, errCancelRequested) {
		by := s.cancelBy
		if by == "" {
			by = "the user"
		}
		errs = append(errs, s.setTask(cctx, engine.TaskCancelled, "cancelled by "+by))
		errs = append(errs, s.emit(cctx, task.EventCancelled, map[string]any{"by": by, "phase": phase, "head": head}))
	} else {
		why := cause.Error()
		if !strings.HasPrefix(why, "interrupted") {
			why = "interrupted (" + why + ")"
		}
		reason := fmt.Sprintf("%s in %s: resume with bcode task resume %s", why, phase, s.t.ID)
		errs = append(errs, s.setTask(cctx, engine.TaskBlocked, reason))
		errs = append(errs, s.emit(cctx, task.EventInterrupted, map[string]any{"signal": cause.Error(), "phase": phase, "head": head, "pid": os.Getpid()}))
		runErr = fmt.Errorf("%w: %v", ErrStopped, cause)
	}
	// The release gets its own moment even when the cleanup used up its
	// time: a lease left behind would make the next run wait for its TTL
	// on another machine.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(parent), time.Second)
	s.release(rctx)
	rcancel()
	res.Task = *s.t
	if err := errors.Join(errs...); err != nil {
		return res, errors.Join(runErr, fmt.Errorf("stopping cleanly: %w", err))
	}
	return res, runErr
}

func reasonText(rs []verify.Reason) string {
	var parts []string
	for _, r := range rs {
		if r.Message != "" {
			parts = append(parts, r.Message)
		} else {
			parts = append(parts, r.Code)
		}
	}
	return strings.Join(parts, "; ")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 72 {
		s = s[:72]
	}
	return s
}

// sessionSlot waits for one of the endpoint's session slots (see
// Runner.Endpoint) and returns what gives it back. The slot is held under
// the lease, so a runner that dies frees it when its lease goes stale.
func (s *run) sessionSlot(ctx context.Context) (func(), error) {
	if s.r.Endpoint == "" {
		return func() {}, nil
	}
	poll := s.r.SessionPoll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	s.phase = "waiting for the model endpoint"
	led := s.r.Engine.Ledger
	for {
		err := led.AcquireSession(ctx, s.curLease(), s.r.Endpoint)
		if err == nil {
			break
		}
		if !errors.Is(err, ledger.ErrEndpointBusy) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
	return func() { led.ReleaseSession(context.WithoutCancel(ctx), s.curLease(), s.r.Endpoint) }, nil
}
