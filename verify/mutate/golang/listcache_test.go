package golang

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// The kept `go list` output is used only while what it was derived from is
// unchanged: an edit below the imports keeps the changed package's list, an
// edit to a dependency's source drops the export list (its export data is
// new), a new import drops both, and so does a dependency's new import (the
// changed package's Deps follow it).
func TestListCacheFollowsSources(t *testing.T) {
	dir := t.TempDir()
	write := testrepo.Open(t, dir).WriteFile
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("a/a.go", "package a\n\nimport \"example.com/m/b\"\n\nfunc A(x int) bool { return b.B(x) }\n")
	write("a/a_test.go", "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { A(1) }\n")
	write("b/b.go", "package b\n\nfunc B(x int) bool { return x > 1 }\n")
	write("c/c.go", "package c\n\nfunc C() int { return 1 }\n")
	cache := t.TempDir()

	type result struct {
		cached  int
		targets []listed
		deps    []listed
	}
	lists := func() result {
		t.Helper()
		s := &session{ctx: context.Background(), runner: host.New(), root: dir, rep: &mutate.Report{}, envDone: make(chan struct{})}
		o := mutate.Options{CacheDir: cache}.WithDefaults()
		s.opts = &o
		go s.readEnv()
		targets, deps, err := s.lists(dir, []string{"./a"})
		if err != nil {
			t.Fatal(err)
		}
		if s.envErr != nil {
			t.Skipf("go env: %v", s.envErr)
		}
		return result{s.rep.Stats.ListCached, targets, deps}
	}
	step := func(what string, wantCached int) result {
		t.Helper()
		r := lists()
		if r.cached != wantCached {
			t.Fatalf("%s: %d lists from the cache, want %d", what, r.cached, wantCached)
		}
		// What the cache gave is what go list prints now.
		if wantCached > 0 {
			s := &session{ctx: context.Background(), runner: host.New(), root: dir, rep: &mutate.Report{}, envDone: make(chan struct{})}
			o := mutate.Options{CacheDir: cache, NoCache: true}.WithDefaults()
			s.opts = &o
			go s.readEnv()
			targets, deps, err := s.lists(dir, []string{"./a"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(targets, r.targets) || !reflect.DeepEqual(deps, r.deps) {
				t.Fatalf("%s: the cached lists differ from go list's:\n%+v\n%+v\nwant\n%+v\n%+v", what, r.targets, r.deps, targets, deps)
			}
		}
		return r
	}

	step("first run", 0)
	step("unchanged", 2)
	write("a/a.go", "package a\n\nimport \"example.com/m/b\"\n\nfunc A(x int) bool { return b.B(x + 1) }\n")
	step("edit below the imports", 2)
	write("b/b.go", "package b\n\nfunc B(x int) bool { return x >= 1 }\n")
	step("dependency's source edited", 1)
	write("b/b.go", "package b\n\nimport \"example.com/m/c\"\n\nfunc B(x int) bool { return x >= c.C() }\n")
	r := step("dependency's new import", 0)
	if !strings.Contains(strings.Join(r.targets[0].Deps, " "), "example.com/m/c") {
		t.Fatalf("a's Deps %v lack the dependency's new import", r.targets[0].Deps)
	}
	step("unchanged again", 2)
	write("a/a.go", "package a\n\nimport (\n\t\"strings\"\n\n\t\"example.com/m/b\"\n)\n\nfunc A(x int) bool { return b.B(x + len(strings.TrimSpace(\"\"))) }\n")
	step("new import", 0)
}

// A GOFLAGS with its own -ldflags keeps it: bcode's -s -w on the command
// line would replace it.
func TestBuildFlagsKeepTheRunnersLdflags(t *testing.T) {
	if got := strings.Join(TestBuildFlags(""), " "); got != "-vet=off -ldflags=-s -w" {
		t.Errorf("no GOFLAGS: %q", got)
	}
	if got := strings.Join(TestBuildFlags("-mod=mod -ldflags=-X=main.v=1"), " "); got != "-vet=off" {
		t.Errorf("GOFLAGS with -ldflags: %q", got)
	}
}
