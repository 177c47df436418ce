package codegraph

import (
	"context"
	"os"
	"path/filepath"
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
