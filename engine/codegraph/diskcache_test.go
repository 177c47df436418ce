package codegraph

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testrepo"
)

// TestGraphFileRoundTrip: a graph written to a graph file and read back is
// the assembled graph: the same symbols, edges in the same order both
// ways, files' symbols by line, sorted IDs, package directories.
func TestGraphFileRoundTrip(t *testing.T) {
	repo := writeFixture(t, fixture)
	g, st, err := Index(context.Background(), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := keptGraph{key: "key", g: g, units: st.Units, errors: []string{"a: one", "b: two"}}
	back, err := decodeGraph(string(encodeGraph(k)))
	if err != nil {
		t.Fatal(err)
	}
	if back.key != k.key || back.units != k.units || !reflect.DeepEqual(back.errors, k.errors) {
		t.Fatalf("header: got %q %d %q, want %q %d %q", back.key, back.units, back.errors, k.key, k.units, k.errors)
	}
	want, got := *g, *back.g
	want.units = nil // the units stay in the store; the graph file has none
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("graph read back differs:\ngot  %s\nwant %s", dumpGraph(&got), dumpGraph(&want))
	}
	for _, bad := range []string{"", "x", string(encodeGraph(k))[:40]} {
		if _, err := decodeGraph(bad); err == nil {
			t.Errorf("decodeGraph(%q...) read a truncated section", bad[:min(len(bad), 10)])
		}
	}
}

func dumpGraph(g *Graph) string {
	var b strings.Builder
	for _, id := range g.IDs() {
		s := g.Symbols[id]
		b.WriteString(id + " " + s.File + "\n")
		for _, e := range g.Out(id) {
			b.WriteString("  " + string(e.Kind) + " " + e.To + "\n")
		}
	}
	return b.String()
}

// countingStore is a MemoryStore that counts the loads of its units, and
// is no graphKeeper itself (a DiskCache keeps the graph).
type countingStore struct {
	m     MemoryStore
	loads int
}

func (c *countingStore) Load(ctx context.Context, repo string) (map[string]*Unit, error) {
	c.loads++
	return c.m.Load(ctx, repo)
}

func (c *countingStore) Save(ctx context.Context, repo string, units []*Unit, removed []string) error {
	return c.m.Save(ctx, repo, units, removed)
}

// TestDiskCacheNeverServesAStaleGraph: a new process (a new DiskCache on
// the same directory) gets the kept graph of an unchanged tree without
// reading a unit; an edited file, a checkout of another commit and
// another Go toolchain each give a graph of what is there now, never the
// kept one.
func TestDiskCacheNeverServesAStaleGraph(t *testing.T) {
	r := testrepo.FromTxtar(t, chain)
	units := &countingStore{}
	dir := t.TempDir()
	ctx := context.Background()
	index := func() (*Graph, Stats) {
		t.Helper()
		g, st, err := Index(ctx, r.Dir, &DiskCache{Units: units, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return g, st
	}
	g1, _ := index()
	loads := units.loads
	g2, st := index()
	if units.loads != loads || len(st.Reindexed) != 0 || st.Units != 6 {
		t.Fatalf("unchanged tree: %d unit loads, re-indexed %v, %d units; want the kept graph", units.loads-loads, st.Reindexed, st.Units)
	}
	if dumpGraph(g2) != dumpGraph(g1) {
		t.Fatalf("kept graph differs:\n%s\nwant\n%s", dumpGraph(g2), dumpGraph(g1))
	}
	has := func(g *Graph, name string) bool { return g.Symbols["example.com/chain/island."+name] != nil }

	// An edit of the same size.
	r.WriteFile("island/island.go", "package island\n\nfunc Apart() int { return 0 }\n")
	g3, st := index()
	if !has(g3, "Apart") || has(g3, "Alone") || !reflect.DeepEqual(st.Reindexed, []string{"island"}) {
		t.Fatalf("after an edit: Apart %v, Alone %v, re-indexed %v", has(g3, "Apart"), has(g3, "Alone"), st.Reindexed)
	}

	// A new commit, then the old one checked out again.
	r.Git("commit", "-qam", "apart")
	r.Git("checkout", "-q", "HEAD~1")
	g4, _ := index()
	if !has(g4, "Alone") || has(g4, "Apart") {
		t.Fatalf("after checking out the first commit: Alone %v, Apart %v", has(g4, "Alone"), has(g4, "Apart"))
	}

	// Another Go: every directory is indexed again, none reused.
	defer func(old func() string) { toolchainIdentity = old }(toolchainIdentity)
	toolchainIdentity = func() string { return "go another toolchain" }
	_, st = index()
	if len(st.Reindexed) != 6 || st.Reused != 0 {
		t.Fatalf("another toolchain: re-indexed %v, reused %d; want all 6 again", st.Reindexed, st.Reused)
	}
}
