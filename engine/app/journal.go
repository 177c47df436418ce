package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/task"
)

// journalPage is how many journal entries one read takes: the journal is
// walked page by page, never held whole.
const journalPage = 1000

// JournalCheck is what JournalVerify found: the entries that check, and
// the hash of the last of them (what an archived copy's head is compared
// with).
type JournalCheck struct {
	Entries int64
	Head    string
}

// JournalVerify recomputes the ledger's claim journal: every entry's
// payload digest and hash, and every link. The error wraps
// ledger.ErrChainBroken (a *ledger.BrokenChain) and names the first entry
// that was changed, removed or reordered; the check says how many came
// before it. No ledger yet is an empty, intact journal.
func (e *Engine) JournalVerify(ctx context.Context) (JournalCheck, error) {
	var check ledger.ChainCheck
	err := e.walkJournal(ctx, func(c engine.Claim) error { return check.Next(c) })
	return JournalCheck{Entries: check.Count(), Head: check.Head()}, err
}

// JournalExport writes the journal to w as JSON lines, one engine.Claim a
// line in seq order, as it is stored (a broken chain is exported too:
// journal verify --in judges the file) and returns how many it wrote.
func (e *Engine) JournalExport(ctx context.Context, w io.Writer) (int64, error) {
	var n int64
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	err := e.walkJournal(ctx, func(c engine.Claim) error {
		if err := enc.Encode(c); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// walkJournal calls fn with each entry of the journal, in seq order.
func (e *Engine) walkJournal(ctx context.Context, fn func(engine.Claim) error) error {
	l, err := e.reader(ctx)
	if err != nil || l == nil {
		return err
	}
	var after int64
	for {
		cs, err := l.Claims(ctx, after, journalPage)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if err := fn(c); err != nil {
				return err
			}
		}
		if len(cs) < journalPage {
			return nil
		}
		after = cs[len(cs)-1].Seq
	}
}

// RecordClaim appends one claim about task id to the journal (e.g.
// engine.ClaimExport when a task's change is exported) and returns the
// entry as sealed. payload is marshalled to JSON and made canonical.
func (e *Engine) RecordClaim(ctx context.Context, kind engine.ClaimKind, id string, payload any) (*engine.Claim, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("journal: %s claim of task %s: %w", kind, id, err)
	}
	l, err := e.ledger(ctx)
	if err != nil {
		return nil, err
	}
	c := &engine.Claim{Kind: kind, TaskID: id, Payload: raw}
	if err := l.AppendClaims(ctx, nil, nil, c); err != nil {
		return nil, err
	}
	return c, nil
}

// TaskReview is a task's diff and the digest of its change, read at one
// commit of its branch: what a user reviews and then names when accepting
// (AcceptTask's digest).
func (e *Engine) TaskReview(ctx context.Context, id string) (*task.Review, error) {
	t, err := e.tasks(ctx)
	if err != nil {
		return nil, err
	}
	return t.Review(ctx, id)
}

// VerifyJournalExport checks a journal exported by JournalExport (JSON
// lines, read as a stream) as JournalVerify checks the ledger's: an
// archived copy verifies on its own, with no ledger. A line that is not
// an entry is an error naming it.
func VerifyJournalExport(r io.Reader) (JournalCheck, error) {
	var check ledger.ChainCheck
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	for line := 1; ; line++ {
		var c engine.Claim
		err := dec.Decode(&c)
		if err == io.EOF {
			break
		}
		if err != nil {
			return JournalCheck{Entries: check.Count(), Head: check.Head()}, fmt.Errorf("journal export: entry %d (after %d that check) is not a journal entry: %w", line, check.Count(), err)
		}
		if err := check.Next(c); err != nil {
			return JournalCheck{Entries: check.Count(), Head: check.Head()}, err
		}
	}
	return JournalCheck{Entries: check.Count(), Head: check.Head()}, nil
}
