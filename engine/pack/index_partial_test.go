package pack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/codegraph"
)

// TestPackOnAPartialIndexSaysWhatIsMissing: when the Go index stops at
// its budget, the pack is built from what was indexed (the selection's
// package first), its notes name the packages left out and why, and a
// later pack completes the index and says nothing of the kind.
func TestPackOnAPartialIndexSaysWhatIsMissing(t *testing.T) {
	repo := writeRepo(t, shop)
	store := &codegraph.MemoryStore{}
	sel := &engine.Selection{File: "store/store.go", StartLine: 10, EndLine: 10}
	var first string
	slow := func(done, _ int, dir string) {
		if done == 1 {
			first = dir
		}
		time.Sleep(400 * time.Millisecond)
	}
	p, err := Build(context.Background(), Input{Repo: repo, Selection: sel, Store: store, Redactor: scanner(t),
		IndexProgress: slow, IndexBudget: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if first != "store" {
		t.Fatalf("indexed %q first, want the selection's package store", first)
	}
	note := noteWith(p.Notes, "Go index partial")
	if note == "" || !strings.Contains(note, "not yet indexed") || !strings.Contains(note, "deadline") || !strings.Contains(note, "app") {
		t.Fatalf("notes %q: want one naming the packages not indexed and why", p.Notes)
	}
	if noteWith(p.Notes, "text search") != "" {
		t.Fatalf("a partial index fell back to text search: %q", p.Notes)
	}
	if !strings.Contains(p.Sections[0].Title, "store/store.go") {
		t.Fatalf("first section %q, want the selection", p.Sections[0].Title)
	}
	p2, err := Build(context.Background(), Input{Repo: repo, Selection: sel, Store: store, Redactor: scanner(t)})
	if err != nil {
		t.Fatal(err)
	}
	if n := noteWith(p2.Notes, "Go index partial"); n != "" {
		t.Fatalf("the second pack still partial: %q", n)
	}
}

func noteWith(notes []string, s string) string {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return n
		}
	}
	return ""
}
