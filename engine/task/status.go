package task

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// Usage is how much of its budgets a task has spent, from the ledger alone
// (so it survives any restart): finished attempts, agent turns, model
// tokens, and the wall clock its attempts have run.
type Usage struct {
	Attempts int           `json:"attempts"`
	Turns    int           `json:"turns"`
	Tokens   int           `json:"tokens"`
	Wall     time.Duration `json:"wall_ns"`
}

// Spent says which budget usage has used up, in words, or "".
func (u Usage) Spent(b engine.Budgets) string {
	switch {
	case b.MaxAttempts > 0 && u.Attempts >= b.MaxAttempts:
		return fmt.Sprintf("attempt budget spent: %d of %d attempts", u.Attempts, b.MaxAttempts)
	case b.MaxTurns > 0 && u.Turns >= b.MaxTurns:
		return fmt.Sprintf("turn budget spent: %d of %d turns", u.Turns, b.MaxTurns)
	case b.MaxTokens > 0 && u.Tokens >= b.MaxTokens:
		return fmt.Sprintf("token budget spent: %d of %d tokens", u.Tokens, b.MaxTokens)
	case b.WallClock > 0 && u.Wall >= b.WallClock:
		return fmt.Sprintf("wall-clock budget spent: %s of %s", u.Wall.Round(time.Second), b.WallClock)
	}
	return ""
}

// TurnData is the data of a turn.finished event.
type TurnData struct {
	Turn    int    `json:"turn"`
	Summary string `json:"summary,omitempty"`
	Tokens  int    `json:"tokens"`
	Changed bool   `json:"changed"`
	Done    bool   `json:"done,omitempty"`
	Stuck   bool   `json:"stuck,omitempty"`
}

// UsageOf computes a task's usage from its attempts and events.
func UsageOf(attempts []engine.Attempt, events []engine.Event, now time.Time) Usage {
	var u Usage
	for _, a := range attempts {
		if a.Status == engine.AttemptFinished {
			u.Attempts++
		}
		end := now
		if a.FinishedAt != nil {
			end = *a.FinishedAt
		}
		if d := end.Sub(a.StartedAt); d > 0 {
			u.Wall += d
		}
	}
	u.AddTurns(events)
	return u
}

// Usage is task id's usage from the ledger without reading its log: its
// attempts, and its turns and tokens counted and summed by the database
// over its turn events (ledger.Store.SumEvents), which decodes them as
// AddTurns does for the events the runner writes.
func (e *Engine) Usage(ctx context.Context, id string, now time.Time) (Usage, error) {
	attempts, err := e.Ledger.Attempts(ctx, id)
	if err != nil {
		return Usage{}, err
	}
	return e.usageWith(ctx, id, attempts, now)
}

// usageWith is Usage with the task's attempts already read.
func (e *Engine) usageWith(ctx context.Context, id string, attempts []engine.Attempt, now time.Time) (Usage, error) {
	u := UsageOf(attempts, nil, now)
	turns, tokens, err := e.Ledger.SumEvents(ctx, id, EventTurn, "tokens")
	if err != nil {
		return Usage{}, err
	}
	u.Turns, u.Tokens = turns, int(tokens)
	return u, nil
}

// AddTurns adds the turns and tokens of events (turn events; others are
// passed over) to u: a runner keeps its task's usage by adding each turn's
// new events instead of reading the whole log again.
func (u *Usage) AddTurns(events []engine.Event) {
	for _, ev := range events {
		if ev.Kind != EventTurn {
			continue
		}
		var d TurnData
		if json.Unmarshal(ev.Data, &d) == nil {
			u.Turns++
			u.Tokens += d.Tokens
		}
	}
}

// Status is everything the CLI, the server and the editor panel show
// about one task.
type Status struct {
	Task     engine.Task      `json:"task"`
	Lease    *LeaseStatus     `json:"lease,omitempty"`
	Attempts []engine.Attempt `json:"attempts"`
	Usage    Usage            `json:"usage"`
	// Head is the task branch's commit ("" before the first run).
	Head string `json:"head,omitempty"`
	// VerifiedHead is the commit the last verified check judged.
	VerifiedHead string   `json:"verified_head,omitempty"`
	Worktrees    []string `json:"worktrees,omitempty"`
	LastSeq      int64    `json:"last_seq"`
	// Findings are what accepting Head would land that git acts on
	// (LandingFindings): listed first, and accepted only with --force.
	Findings []verify.Finding `json:"findings,omitempty"`
	// Oracle is the task's reproduction (--reproduce): the command and,
	// once the runner reproduced it, the pinned failing tests and their
	// files' hashes.
	Oracle *engine.Oracle `json:"oracle,omitempty"`
	// Level is the verification level of the last check and what it
	// lacked (verify.Report.Level), "" before any check.
	Level Level `json:"level"`
	// Skipped is what the checkpoints left out of the worktree (nested
	// repositories, files over the caps...), as the last checkpoint that
	// saw each path reported it.
	Skipped []git.Skipped `json:"skipped,omitempty"`
}

// LeaseStatus is the lease with whether it is still live.
type LeaseStatus struct {
	engine.Lease
	Live bool `json:"live"`
}

// Status reads one task's status.
func (e *Engine) Status(ctx context.Context, id string) (*Status, error) {
	t, err := e.Ledger.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	st := &Status{Task: *t}
	if l, err := e.Ledger.Lease(ctx, id); err != nil {
		return nil, err
	} else if l != nil {
		st.Lease = &LeaseStatus{Lease: *l, Live: time.Now().Before(l.Expires)}
	}
	if st.Attempts, err = e.Ledger.Attempts(ctx, id); err != nil {
		return nil, err
	}
	if st.Attempts == nil {
		st.Attempts = []engine.Attempt{}
	}
	events, err := e.Ledger.Events(ctx, id, 0, 0)
	if err != nil {
		return nil, err
	}
	if n := len(events); n > 0 {
		st.LastSeq = events[n-1].Seq
	}
	st.Usage = UsageOf(st.Attempts, events, time.Now())
	st.VerifiedHead = verifiedHead(events)
	st.Level = lastLevel(events)
	if st.Oracle, err = e.Ledger.Oracle(ctx, id); err != nil {
		return nil, err
	}
	st.Skipped = skippedOf(events)
	if repo, err := git.Open(ctx, t.Repo); err == nil {
		if out, err := repo.Git(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+t.Branch); err == nil {
			st.Head = string(trimNL(out))
		}
		if st.Head != "" && st.Head != t.Base {
			if st.Findings, err = LandingFindings(ctx, repo, t.Base, st.Head); err != nil {
				return nil, err
			}
		}
	}
	dirs, _ := e.worktreeDirs(id)
	for _, d := range dirs {
		st.Worktrees = append(st.Worktrees, d)
	}
	return st, nil
}

// skippedOf is what the last checkpoint (turn or recovery commit) left
// out of the worktree.
func skippedOf(events []engine.Event) []git.Skipped {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.Kind != EventTurn && ev.Kind != EventRecoveryCommit {
			continue
		}
		var d struct {
			Skipped []git.Skipped `json:"skipped"`
		}
		if json.Unmarshal(ev.Data, &d) == nil {
			return d.Skipped
		}
	}
	return nil
}

// List returns the status of every task of a repository ("" for all),
// newest first, without the per-task git and event reads.
func (e *Engine) List(ctx context.Context, repo string) ([]engine.Task, error) {
	if repo != "" {
		r, err := git.Open(ctx, repo)
		if err != nil {
			return nil, err
		}
		repo = r.Dir
	}
	return e.Ledger.Tasks(ctx, repo)
}

// verifiedHead is the head of the last check.finished whose verdict was
// verified, unless a later commit event came after it.
func verifiedHead(events []engine.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if commitKinds[ev.Kind] {
			return ""
		}
		if ev.Kind == EventCheckFinished {
			var d struct {
				Head    string `json:"head"`
				Verdict string `json:"verdict"`
			}
			if json.Unmarshal(ev.Data, &d) == nil && d.Verdict == "verified" {
				return d.Head
			}
			return ""
		}
	}
	return ""
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Events returns the task's events after seq afterSeq (0: all).
func (e *Engine) Events(ctx context.Context, id string, afterSeq int64) ([]engine.Event, error) {
	if _, err := e.Ledger.Task(ctx, id); err != nil {
		return nil, err
	}
	return e.Ledger.Events(ctx, id, afterSeq, 0)
}

// Follow calls fn for each event of the task after afterSeq, in order, as
// they are appended, until the task is settled with no lease held (after
// its last events are delivered), fn returns an error, or ctx ends.
func (e *Engine) Follow(ctx context.Context, id string, afterSeq int64, fn func(engine.Event) error) error {
	for {
		// Read the state first: events appended before a settled state
		// was seen are then all in the read that follows.
		t, err := e.Ledger.Task(ctx, id)
		if err != nil {
			return err
		}
		l, err := e.Ledger.Lease(ctx, id)
		if err != nil {
			return err
		}
		evs, err := e.Ledger.Events(ctx, id, afterSeq, 0)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
			afterSeq = ev.Seq
		}
		if Settled(t.Status) && l == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(e.poll()):
		}
	}
}

// Diff is the task branch's change against its base, as `git diff` prints
// it (no external diff, no textconv), with every file git would call
// binary shown escaped or as a hex dump instead of "Binary files differ"
// (see renderDiff).
func (e *Engine) Diff(ctx context.Context, id string) ([]byte, error) {
	repo, t, head, err := e.taskHead(ctx, id)
	if err != nil {
		return nil, err
	}
	return renderDiff(ctx, repo, t.Base, head)
}
