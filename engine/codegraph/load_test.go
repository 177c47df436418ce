package codegraph

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// chain is a module whose import graph is a line, a ← b ← c ← d ← e
// (each imports the one before), with island on its own: a load that
// starts at c reaches b and d first, then a and e, island last.
const chain = `
-- go.mod --
module example.com/chain

go 1.22
-- a/a.go --
package a

func A() int { return 1 }
-- b/b.go --
package b

import "example.com/chain/a"

func B() int { return a.A() + 1 }
-- c/c.go --
package c

import "example.com/chain/b"

func C() int { return b.B() + 1 }
-- d/d.go --
package d

import "example.com/chain/c"

func D() int { return c.C() + 1 }
-- e/e.go --
package e

import "example.com/chain/d"

func E() int { return d.D() + 1 }
-- island/island.go --
package island

func Alone() int { return 0 }
`

// TestLoadStartsAtTheSelection: the selection's package is indexed first,
// then the others by import distance (imports and importers alike), the
// unrelated one last, and progress counts every one of them.
func TestLoadStartsAtTheSelection(t *testing.T) {
	repo := writeFixture(t, chain)
	var order []string
	var totals []int
	_, st, err := IndexWith(context.Background(), repo, nil, Options{First: "c/c.go", Progress: func(done, total int, dir string) {
		order = append(order, dir)
		totals = append(totals, total)
		if done != len(order) {
			t.Errorf("progress says %d done after %d directories", done, len(order))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"c", "b", "d", "a", "e", "island"}
	if !slices.Equal(order, want) {
		t.Fatalf("indexed in order %v, want %v", order, want)
	}
	if totals[0] != 6 || len(st.Pending) != 0 || st.Units != 6 {
		t.Fatalf("totals %v, pending %v, units %d", totals, st.Pending, st.Units)
	}
}

// TestLoadCutByItsDeadlineIsPartialAndSaysSo: a load whose deadline passes
// returns the graph of what it indexed (the selection's package and its
// nearest), lists the rest as pending with the reason, stores only what it
// finished, and the next load indexes exactly the pending ones.
func TestLoadCutByItsDeadlineIsPartialAndSaysSo(t *testing.T) {
	repo := writeFixture(t, chain)
	store := &MemoryStore{}
	var mu sync.Mutex
	var done []string
	// Each directory "takes" 300ms (the progress callback runs inside the
	// load); the deadline allows about two of them.
	slow := func(_, _ int, dir string) {
		mu.Lock()
		done = append(done, dir)
		mu.Unlock()
		time.Sleep(300 * time.Millisecond)
	}
	g, st, err := IndexWith(context.Background(), repo, store, Options{First: "c", Progress: slow, CheckDeadline: 450 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Pending) == 0 || len(st.Pending) >= 6 {
		t.Fatalf("pending %v: want a partial load", st.Pending)
	}
	if !strings.Contains(st.Why, "deadline") || !strings.Contains(st.Why, "load") {
		t.Fatalf("Why = %q: want the deadline and the load", st.Why)
	}
	if g.Symbols["example.com/chain/c.C"] == nil {
		t.Fatalf("the selection's package is not in the partial graph")
	}
	for _, d := range st.Pending {
		if slices.Contains(done, d) {
			t.Fatalf("%s both indexed and pending", d)
		}
		if g.Symbols["example.com/chain/"+d+"."+strings.ToUpper(d[:1])] != nil {
			t.Fatalf("pending %s is in the graph", d)
		}
	}
	if st.Units+len(st.Pending) != 6 || len(st.Reindexed) != st.Units {
		t.Fatalf("units %d, reindexed %v, pending %v", st.Units, st.Reindexed, st.Pending)
	}
	pending := st.Pending
	g2, st2, err := Index(context.Background(), repo, store)
	if err != nil {
		t.Fatal(err)
	}
	// The pending ones, and (as for any changed package) their importers.
	for _, d := range pending {
		if !slices.Contains(st2.Reindexed, d) {
			t.Fatalf("second load re-indexed %v, not the pending %s", st2.Reindexed, d)
		}
	}
	if slices.Contains(st2.Reindexed, "c") || len(st2.Pending) != 0 || st2.Units != 6 {
		t.Fatalf("second load re-indexed %v (pending before %v), pending now %v, units %d", st2.Reindexed, pending, st2.Pending, st2.Units)
	}
	if g2.Symbols["example.com/chain/island.Alone"] == nil {
		t.Fatalf("the completed graph lacks island.Alone")
	}
}

// TestLoadDeadlineFromMeasurement: a load of directories indexed before
// gets verify's margin over what they took, stretched by nothing else; a
// directory never measured gets the floor stretched by the load.
func TestLoadDeadlineFromMeasurement(t *testing.T) {
	stored := map[string]*Unit{"a": {Took: 2 * time.Second}, "b": {Took: 3 * time.Second}}
	atRest := sandbox.Load{Avg1: 1, CPUs: 2}
	busy := sandbox.Load{Avg1: 20, CPUs: 2}
	list, check, measured := loadDeadlines(atRest, []string{"a", "b"}, stored)
	if measured != 5*time.Second || check != atRest.Deadline(0, 5*time.Second) || check != 35*time.Second {
		t.Fatalf("measured %s, check deadline %s: want 5s and 5×5s+10s", measured, check)
	}
	if list != loadFloor {
		t.Fatalf("list deadline at rest %s, want the floor %s", list, loadFloor)
	}
	if _, check, _ := loadDeadlines(busy, []string{"a", "b", "new"}, stored); check != 10*loadFloor {
		t.Fatalf("with an unmeasured directory at load 20 on 2 CPUs: %s, want 10× the floor", check)
	}
	if list, _, _ := loadDeadlines(busy, nil, stored); list != 10*loadFloor {
		t.Fatalf("list deadline at load 20 on 2 CPUs: %s, want 10× the floor", list)
	}
	// And a real load takes its deadline from what the last one
	// measured: the units store how long they took, and re-indexing e
	// (nothing imports it) gets 5× e's time plus verify's slack.
	repo := writeFixture(t, chain)
	store := &MemoryStore{}
	if _, _, err := Index(context.Background(), repo, store); err != nil {
		t.Fatal(err)
	}
	units, _ := store.Load(context.Background(), repo)
	took := units["e"].Took
	if took <= 0 {
		t.Fatalf("unit e stored no time taken: %+v", units["e"])
	}
	if err := os.WriteFile(filepath.Join(repo, "e", "e.go"), []byte("package e\n\nfunc E() int { return 5 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, st, err := Index(context.Background(), repo, store)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Reindexed, []string{"e"}) || st.CheckDeadline != sandbox.ReadLoad().Deadline(0, took) {
		t.Fatalf("re-indexed %v with deadline %s, want [e] with 5×%s+10s", st.Reindexed, st.CheckDeadline, took)
	}
}

// TestListPastItsDeadlineSaysSo: a go list cut by its deadline fails the
// index with a sentence naming the deadline and the load (what the pack's
// note shows), not a bare "failed".
func TestListPastItsDeadlineSaysSo(t *testing.T) {
	repo := writeFixture(t, chain)
	_, _, err := IndexWith(context.Background(), repo, nil, Options{ListDeadline: time.Millisecond})
	if err == nil {
		t.Fatal("go list finished within a millisecond")
	}
	why := WhyFailed(err)
	if !strings.Contains(why, "go list did not finish within its deadline of") || !strings.Contains(why, "load") {
		t.Fatalf("WhyFailed = %q", why)
	}
}
