package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/verify"
)

// journal reads the whole journal and checks its chain.
func journal(t *testing.T, e *task.Engine) []engine.Claim {
	t.Helper()
	cs, err := e.Ledger.Claims(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var check ledger.ChainCheck
	for _, c := range cs {
		if err := check.Next(c); err != nil {
			t.Fatal(err)
		}
	}
	return cs
}

func payload(t *testing.T, c engine.Claim) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.Payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAcceptStaleDigestRefused: the task's branch moves after the user
// reviewed its diff; accepting with the reviewed digest is refused, even
// forced, and nothing lands or is journalled. Accepting the change shown
// now, with its digest, lands it and journals the approval.
func TestAcceptStaleDigestRefused(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Verified)
	seen, err := e.Review(ctx, tk.ID)
	if err != nil || !strings.HasPrefix(seen.Digest, "sha256:") || !strings.Contains(string(seen.Diff), "+\treturn a + b") {
		t.Fatalf("review: %v %+v", err, seen)
	}
	// The branch moves after the review: one more commit on it, in the
	// task's worktree (as a runner resumed on it would make).
	st, err := e.Status(ctx, tk.ID)
	if err != nil || len(st.Worktrees) != 1 {
		t.Fatalf("status: %v %+v", err, st)
	}
	wt := st.Worktrees[0]
	write(t, wt, "x.txt", "after the review\n")
	git(t, wt, "add", "x.txt")
	git(t, wt, "commit", "-q", "-m", "after the review")
	moved := git(t, repo, "rev-parse", tk.Branch)
	mainBefore := git(t, repo, "rev-parse", "main")

	for _, force := range []bool{false, true} {
		_, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester", Digest: seen.Digest, Force: force})
		if !errors.Is(err, engine.ErrStaleDigest) || !strings.Contains(err.Error(), "nothing landed") || !strings.Contains(err.Error(), seen.Digest) {
			t.Fatalf("stale digest (force %v): %v", force, err)
		}
	}
	if got := git(t, repo, "rev-parse", "main"); got != mainBefore {
		t.Fatalf("main moved from %s to %s on a refused accept", mainBefore, got)
	}
	if st, _ := e.Ledger.Task(ctx, tk.ID); st.Status != engine.TaskVerified {
		t.Fatalf("status after a refused accept: %s", st.Status)
	}
	if cs := journal(t, e); len(cs) != 0 {
		t.Fatalf("a refused accept journalled %+v", cs)
	}

	now, err := e.Review(ctx, tk.ID)
	if err != nil || now.Digest == seen.Digest || now.Head != moved {
		t.Fatalf("review after the move: %v %+v", err, now)
	}
	res, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester", Digest: now.Digest, Force: true})
	if err != nil || res.Digest != now.Digest {
		t.Fatalf("accept with the digest shown: %v %+v", err, res)
	}
	if got := git(t, repo, "rev-parse", "main"); got != moved {
		t.Fatalf("main is at %s, not the reviewed head %s", got, moved)
	}
	cs := journal(t, e)
	if len(cs) != 2 || cs[0].Kind != engine.ClaimApproval || cs[1].Kind != engine.ClaimAcceptance || cs[0].TaskID != tk.ID {
		t.Fatalf("journal after accept: %+v", cs)
	}
	approval := payload(t, cs[0])
	if approval["digest"] != now.Digest || approval["reviewed"] != true || approval["by"] != "tester" || approval["head"] != moved || approval["os_user"] == "" {
		t.Fatalf("approval: %s", cs[0].Payload)
	}
	if acc := payload(t, cs[1]); acc["to"] != moved || acc["force"] != true || acc["digest"] != now.Digest {
		t.Fatalf("acceptance: %s", cs[1].Payload)
	}
}

// TestAcceptDigest: a verified task accepted with the digest of its diff
// lands; without one it lands too, its approval saying nothing was named;
// a malformed digest is refused before anything is read.
func TestAcceptDigest(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Verified)
	for _, bad := range []string{"abc", "sha256:xyz", "sha256:" + strings.Repeat("A", 64), "sha1:" + strings.Repeat("0", 40)} {
		if _, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester", Digest: bad}); !errors.Is(err, engine.ErrBadDigest) {
			t.Errorf("digest %q: %v, want ErrBadDigest", bad, err)
		}
	}
	r, err := e.Review(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester", Digest: r.Digest})
	if err != nil || res.Forced || res.Digest != r.Digest {
		t.Fatalf("accept: %v %+v", err, res)
	}
	if got := git(t, repo, "rev-parse", "main"); got != r.Head {
		t.Fatalf("main at %s, want %s", got, r.Head)
	}
	evs, _ := e.Ledger.Events(ctx, tk.ID, 0, 0)
	if last := evs[len(evs)-1]; last.Kind != task.EventAccepted || !strings.Contains(string(last.Data), r.Digest) {
		t.Fatalf("last event %s %s", last.Kind, last.Data)
	}

	other := runTaskWith(t, e, repo, fixAgent{"notes.txt", "more\n"})
	if _, err := e.Accept(ctx, other.ID, task.AcceptOptions{By: "tester"}); err != nil {
		t.Fatal(err)
	}
	cs := journal(t, e)
	if len(cs) != 4 || payload(t, cs[0])["reviewed"] != true || payload(t, cs[2])["reviewed"] != false || cs[2].TaskID != other.ID {
		t.Fatalf("journal: %+v", cs)
	}
}

// TestRejectJournalled: a reject journals its rejection with the deleted
// branch's head.
func TestRejectJournalled(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Verified)
	res, err := e.Reject(ctx, tk.ID, "tester")
	if err != nil {
		t.Fatal(err)
	}
	cs := journal(t, e)
	if len(cs) != 1 || cs[0].Kind != engine.ClaimRejection || payload(t, cs[0])["head"] != res.Head || payload(t, cs[0])["by"] != "tester" {
		t.Fatalf("journal: %+v", cs)
	}
}
