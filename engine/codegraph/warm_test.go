package codegraph

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestMemoryStoreReusesTheGraphOnlyForTheSameTree: a second Index of an
// unchanged tree through a MemoryStore returns the graph it assembled
// before (no unit read back, nothing assembled); an edit that keeps the
// file's size but not its modification time is seen, and the graph then
// holds the edit.
func TestMemoryStoreReusesTheGraphOnlyForTheSameTree(t *testing.T) {
	repo := writeFixture(t, chain)
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{"a", "b", "c", "d", "e", "island"} {
		if err := os.Chtimes(filepath.Join(repo, d, d+".go"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	store := &MemoryStore{}
	ctx := context.Background()
	g1, _, err := Index(ctx, repo, store)
	if err != nil {
		t.Fatal(err)
	}
	g2, st, err := Index(ctx, repo, store)
	if err != nil {
		t.Fatal(err)
	}
	if g2 != g1 || st.Reused != 6 || len(st.Reindexed) != 0 {
		t.Fatalf("unchanged tree: same graph %v, reused %d, re-indexed %v", g2 == g1, st.Reused, st.Reindexed)
	}
	// Same size, new content ("Alone" becomes "Apart"), a later time.
	f := filepath.Join(repo, "island", "island.go")
	if err := os.WriteFile(f, []byte("package island\n\nfunc Apart() int { return 0 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f, old.Add(time.Second), old.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	g3, st, err := Index(ctx, repo, store)
	if err != nil {
		t.Fatal(err)
	}
	if g3 == g1 || g3.Symbols["example.com/chain/island.Apart"] == nil || g3.Symbols["example.com/chain/island.Alone"] != nil {
		t.Fatalf("edit not seen: re-indexed %v, same graph %v", st.Reindexed, g3 == g1)
	}
}

// TestKeptGraphKeepsItsErrors: the graph a MemoryStore hands back for an
// unchanged tree comes with the same package errors the first Index
// reported, so a warm pack still notes them.
func TestKeptGraphKeepsItsErrors(t *testing.T) {
	repo := writeFixture(t, chain+`
-- broken/broken.go --
package broken

func Broken( { return }
`)
	store := &MemoryStore{}
	ctx := context.Background()
	_, st1, err := Index(ctx, repo, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(st1.Errors) == 0 {
		t.Fatal("the syntax error was not reported")
	}
	_, st2, err := Index(ctx, repo, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(st2.Reindexed) != 0 || !slices.Equal(st2.Errors, st1.Errors) {
		t.Fatalf("warm index: re-indexed %v, errors %q, want none and %q", st2.Reindexed, st2.Errors, st1.Errors)
	}
}
