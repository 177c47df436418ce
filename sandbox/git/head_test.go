package git

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeadOf: one process gives the working tree's top (from a
// subdirectory too), HEAD's commit and its tree, as rev-parse names them;
// a repository without a commit is an error, not an empty Head.
func TestHeadOf(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := HeadOf(ctx, f.dir); err == nil {
		t.Fatal("HeadOf of a repository without a commit succeeded")
	}
	f.write("sub/a.txt", "a\n")
	commit := f.commit("first")
	h, err := HeadOf(ctx, filepath.Join(f.dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	top, _ := filepath.EvalSymlinks(f.dir)
	want := Head{Top: top, Commit: commit, Tree: strings.TrimSpace(f.git("rev-parse", "HEAD^{tree}"))}
	if got, _ := filepath.EvalSymlinks(h.Top); got != want.Top || h.Commit != want.Commit || h.Tree != want.Tree {
		t.Fatalf("HeadOf = %+v, want %+v", h, want)
	}
}

// TestHeadMemo: within WithHeadMemo's context HeadOf resolves a directory
// once (a later commit is not seen there), and outside it every call
// resolves afresh.
func TestHeadMemo(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "a\n")
	first := f.commit("first")
	ctx := WithHeadMemo(context.Background())
	h, err := HeadOf(ctx, f.dir)
	if err != nil || h.Commit != first {
		t.Fatalf("HeadOf = %+v, %v; want commit %s", h, err, first)
	}
	f.write("a.txt", "b\n")
	second := f.commit("second")
	if h, err := HeadOf(ctx, f.dir); err != nil || h.Commit != first {
		t.Errorf("HeadOf in the same memo = %+v, %v; want the first resolution, %s", h, err, first)
	}
	if h, err := HeadOf(context.Background(), f.dir); err != nil || h.Commit != second {
		t.Errorf("HeadOf without a memo = %+v, %v; want %s", h, err, second)
	}
	if h, err := HeadOf(WithHeadMemo(context.Background()), f.dir); err != nil || h.Commit != second {
		t.Errorf("HeadOf in a new memo = %+v, %v; want %s", h, err, second)
	}
}
