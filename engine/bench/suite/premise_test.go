package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// moduleRoot is bcode's module root, from this package's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestPremise holds the premise of every tasks-suite task with a
// reference solution: its hidden checks fail on the base (the hidden files
// written) and pass with the reference applied, run through the language
// adapters on the host. Without that, a pass or a fail says nothing about
// the agent. -short checks only that each fixture parses and its checks
// read; a missing toolchain skips the task (fails under
// BCODE_REQUIRE_ALL=1).
func TestPremise(t *testing.T) {
	root := moduleRoot(t)
	tasks, err := bench.LoadCatalog(root)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, task := range tasks {
		if task.Suite != bench.SuiteTasks {
			continue
		}
		ran++
		t.Run(task.ID, func(t *testing.T) { premise(t, root, task) })
	}
	if ran == 0 {
		t.Fatal("the catalog has no tasks-suite task")
	}
}

func premise(t *testing.T, root string, task bench.Task) {
	fx, err := bench.LoadFixture(root, task)
	if err != nil {
		t.Fatal(err)
	}
	var tests []verify.Test
	for _, c := range task.Checks {
		ts, err := bench.ParseCheck(c)
		if err != nil {
			t.Fatalf("check %q: %v", c, err)
		}
		tests = append(tests, ts...)
	}
	if len(fx.Reference) == 0 {
		t.Skip("no reference solution")
	}
	if testing.Short() {
		t.Skip("-short: the checks are not run")
	}
	adapter := premiseAdapter(t, task.Language)
	values := map[string]string{}
	for _, n := range task.Canaries {
		values[n] = "premise-canary-" + strings.ToLower(n)
	}
	base, err := bench.ExpandCanaries(fx.Base, values)
	if err != nil {
		t.Fatal(err)
	}
	withRef := bench.Applied(base, fx.Reference)
	for _, side := range []struct {
		name  string
		files []txtar.File
		pass  bool
	}{{"base", base, false}, {"reference", withRef, true}} {
		results := runPremiseChecks(t, adapter, side.files, fx.Hidden, tests)
		for _, id := range checkOutcomes(tests, results, side.pass) {
			t.Errorf("on the %s with the hidden files: %s", side.name, id)
		}
	}
}

// premiseAdapter is the gate's adapter of the language, as it runs on
// the host (check.Adapters), or a skip (a failure under
// BCODE_REQUIRE_ALL=1) when its toolchain is missing.
func premiseAdapter(t *testing.T, lang string) verify.Adapter {
	t.Helper()
	switch lang {
	case "go":
		testenv.Go(t)
	case "python":
		testenv.Pytest(t)
	case "rust":
		testenv.Command(t, "cargo", "install Rust from https://rustup.rs")
	case "javascript":
		testenv.Node(t)
	}
	for _, a := range check.Adapters(host.New(), config.Config{}) {
		if a.Language() == lang {
			return a
		}
	}
	testenv.Missing(t, fmt.Sprintf("no adapter for %s", lang))
	return nil
}

// runPremiseChecks writes files and then the hidden files into a fresh directory
// and runs tests there once each.
func runPremiseChecks(t *testing.T, a verify.Adapter, files, hidden []txtar.File, tests []verify.Test) []verify.TestResult {
	t.Helper()
	dir := t.TempDir()
	if err := bench.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	splicer, _ := a.(verify.TestSplicer)
	if err := bench.WriteHidden(dir, hidden, splicer); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	results, err := a.RunTests(ctx, host.New(), dir, tests, verify.RunOptions{Count: 1, Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// checkOutcomes lists the tests whose outcome is not the premise's: each
// must pass (wantPass) or each must not.
func checkOutcomes(tests []verify.Test, results []verify.TestResult, wantPass bool) []string {
	got := map[string]verify.TestResult{}
	for _, r := range results {
		got[r.Test.ID()] = r
	}
	var bad []string
	for _, tt := range tests {
		r, ok := got[tt.ID()]
		switch {
		case !ok:
			bad = append(bad, tt.ID()+": no result")
		case (r.Outcome == verify.Pass) != wantPass:
			bad = append(bad, fmt.Sprintf("%s: %s (want %s) %s", tt.ID(), r.Outcome, map[bool]string{true: "pass", false: "not pass"}[wantPass], firstLine(r.Detail)))
		}
	}
	return bad
}
