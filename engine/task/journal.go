package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// Review is a task's change as a user reviews it: the diff shown
// (renderDiff) and the digest of its canonical diff (git.CanonicalDiff),
// both of base..Head, with Head read once.
type Review struct {
	Base   string
	Head   string // the task branch's commit when it was read
	Diff   []byte
	Digest string // sha256:<hex> of the canonical diff of Base..Head
}

// Review reads the task's branch once and returns its diff and the digest
// accepting it checks (AcceptOptions.Digest).
func (e *Engine) Review(ctx context.Context, id string) (*Review, error) {
	repo, t, head, err := e.taskHead(ctx, id)
	if err != nil {
		return nil, err
	}
	r := &Review{Base: t.Base, Head: head}
	if r.Diff, err = renderDiff(ctx, repo, t.Base, head); err != nil {
		return nil, err
	}
	if r.Digest, err = changeDigest(ctx, repo, t.Base, head); err != nil {
		return nil, err
	}
	return r, nil
}

// taskHead opens the task's repository and reads its branch's commit.
func (e *Engine) taskHead(ctx context.Context, id string) (*git.Repo, *engine.Task, string, error) {
	t, err := e.Ledger.Task(ctx, id)
	if err != nil {
		return nil, nil, "", err
	}
	repo, err := git.Open(ctx, t.Repo)
	if err != nil {
		return nil, nil, "", err
	}
	out, err := repo.Git(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+t.Branch+"^{commit}")
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) {
			return nil, nil, "", fmt.Errorf("task %s has no branch %s (it never ran, or it was rejected)", id, t.Branch)
		}
		return nil, nil, "", err
	}
	return repo, t, strings.TrimSpace(string(out)), nil
}

// changeDigest is the digest of the canonical diff base..head: what a
// review names and an accept checks.
func changeDigest(ctx context.Context, repo *git.Repo, base, head string) (string, error) {
	d, err := repo.CanonicalDiff(ctx, base, head)
	if err != nil {
		return "", fmt.Errorf("computing the change's digest: %w", err)
	}
	return git.Digest(d), nil
}

// CheckDigest returns an error wrapping engine.ErrBadDigest unless d is a change
// digest as Review gives it.
func CheckDigest(d string) error {
	if !git.ValidDigest(d) {
		return fmt.Errorf("%w: %q (want %s and 64 lower-case hex digits, as bcode task diff prints it)", engine.ErrBadDigest, d, git.DigestPrefix)
	}
	return nil
}

// checkReviewed computes the digest of the change accept would land and,
// when the user named the digest they reviewed (checked by Accept before
// anything is read), refuses a change that is not that one.
func (a *acceptRun) checkReviewed(ctx context.Context) error {
	var err error
	if a.digest, err = changeDigest(ctx, a.user, a.t.Base, a.head); err != nil {
		return err
	}
	if a.opts.Digest != "" && a.opts.Digest != a.digest {
		return fmt.Errorf("task %s: %w: you reviewed %s, the task's branch is now %.12s with change %s; nothing landed: review it again (bcode task diff %s)",
			a.id, engine.ErrStaleDigest, a.opts.Digest, a.head, a.digest, a.id)
	}
	return nil
}

// acceptClaims are the journal entries an accept makes: the approval (who,
// as which OS user, approved which change, and whether they named the
// digest they reviewed) and the acceptance (what landed where, data).
func (a *acceptRun) acceptClaims(data map[string]any) ([]*engine.Claim, error) {
	approval, err := newClaim(engine.ClaimApproval, a.id, map[string]any{
		"by": a.opts.By, "os_user": osUser(), "digest": a.digest, "reviewed": a.opts.Digest != "",
		"base": a.t.Base, "head": a.head,
	})
	if err != nil {
		return nil, err
	}
	acceptance, err := newClaim(engine.ClaimAcceptance, a.id, data)
	if err != nil {
		return nil, err
	}
	return []*engine.Claim{approval, acceptance}, nil
}

// appendClaimed appends the event of kind with data and the claims it
// makes in one transaction under lease (see ledger.Store.AppendClaims).
func (e *Engine) appendClaimed(ctx context.Context, lease *engine.Lease, id string, kind engine.EventKind, data any, claims ...*engine.Claim) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return e.Ledger.AppendClaims(ctx, lease, &engine.Event{TaskID: id, Kind: kind, Data: raw}, claims...)
}

func newClaim(kind engine.ClaimKind, id string, payload any) (*engine.Claim, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("journal: %s claim of task %s: %w", kind, id, err)
	}
	return &engine.Claim{Kind: kind, TaskID: id, Payload: raw}, nil
}

// osUser is the operating system's name for the user running bcode.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if n := os.Getenv("USER"); n != "" {
		return n
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}
