package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

// TestReadChange: a task branch's change on a real repository, within
// small limits: a text file with both sides, a binary file and a file
// over the content limit named in the notes, and a path the task does not
// change refused with ErrNotInChange.
func TestReadChange(t *testing.T) {
	ctx := context.Background()
	repo := testrepo.FromFiles(t, map[string]string{"a.txt": "one\n", "bin.dat": "x\n"})
	base := strings.TrimSpace(repo.Git("rev-parse", "HEAD"))
	repo.Git("checkout", "-q", "-b", "bcode/t1")
	repo.WriteFile("a.txt", "two\n")
	repo.WriteFile("bin.dat", "a\x00b\n")
	repo.WriteFile("big.txt", strings.Repeat("z", 100)+"\n")
	repo.Commit("change")
	tk := &engine.Task{ID: "t1", Repo: repo.Dir, Base: base, Branch: "bcode/t1", Status: engine.TaskVerified}
	lim := task.ChangeLimits{FileContent: 64, Content: 1 << 10, Diff: 1 << 10}

	c, err := task.ReadChange(ctx, tk, "", lim)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]task.FileChange{}
	for _, f := range c.Files {
		byPath[f.Path] = f
	}
	if a := byPath["a.txt"]; a.BaseContent == nil || *a.BaseContent != "one\n" || a.HeadContent == nil || *a.HeadContent != "two\n" || a.Status != "M" {
		t.Errorf("a.txt: %+v", a)
	}
	if b := byPath["bin.dat"]; !b.Binary || b.Omitted != task.OmittedBinary || b.HeadContent != nil {
		t.Errorf("bin.dat: %+v", b)
	}
	if g := byPath["big.txt"]; g.Omitted != task.OmittedLarge || g.HeadSize != 101 || g.Status != "A" {
		t.Errorf("big.txt: %+v", g)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "big.txt is too large") {
		t.Errorf("notes %q", c.Notes)
	}
	if !strings.Contains(c.Diff, "+two") || strings.Contains(c.Diff, "zzz") || c.Truncated {
		t.Errorf("diff (truncated %v):\n%s", c.Truncated, c.Diff)
	}

	if _, err := task.ReadChange(ctx, tk, "nothing.txt", lim); !errors.Is(err, task.ErrNotInChange) || !strings.Contains(err.Error(), "does not change nothing.txt (it changes 3 files)") {
		t.Errorf("a path outside the change: %v", err)
	}

	tk.Branch = "bcode/gone"
	c, err = task.ReadChange(ctx, tk, "", lim)
	if err != nil || c.Head != "" || len(c.Files) != 0 || len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "does not exist") {
		t.Errorf("no branch: %+v, %v", c, err)
	}
}
