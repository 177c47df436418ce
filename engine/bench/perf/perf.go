// Package perf is `bcode bench perf`: bcode's side-by-side performance
// tables (the gate against plain test runs, evidence against gremlins and
// Stryker, packs against history-only ranking, the LSP server, the first
// model request, the kill loop). Each table runs bcode and its baselines
// in one process, one after the other on the same inputs, and reports
// ratios, because absolute times on a shared two-core machine mean
// little. It was the separate bcode-bench command; it is one of the bench's
// suites now, so every evaluation runs one way.
//
// Each table lives in its own file and registers itself.
package perf

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/bcode-dev/bcode/engine/app"
)

type benchmark struct {
	name    string
	summary string
	run     func(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int
}

var benchmarks = map[string]benchmark{}

func register(b benchmark) {
	if _, dup := benchmarks[b.name]; dup {
		panic("perf: duplicate table " + b.name)
	}
	benchmarks[b.name] = b
}

// Usage writes the usage line, the tables' names and summaries, and how
// to get a table's flags.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bcode bench perf TABLE [FLAG...]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(benchmarks))
	for n := range benchmarks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-13s %s\n", n, benchmarks[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'bcode bench perf TABLE -h' for a table's flags; docs/evaluation.md lists what each measures.")
}

// Run runs the table args[0] names with the rest of args as its flags
// and returns the process's exit code (2: no such table). It opens an
// engine of its own with a ledger in a temporary directory: the checks a
// table runs are recorded as bcode records them, never in the user's
// ledger.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "bcode bench perf: give a table")
		Usage(stderr)
		return 2
	}
	b, ok := benchmarks[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "bcode bench perf: unknown table %q\n", args[0])
		Usage(stderr)
		return 2
	}
	if wantsHelp(args[1:]) {
		// A table's flag set answers -h with its flags and flag.ErrHelp,
		// which the table returns as a usage error: here it is the help
		// asked for, on stdout, exit 0, as every bcode command answers.
		b.run(ctx, nil, []string{"-h"}, stdout, stdout)
		return 0
	}
	state, err := os.MkdirTemp("", "bcode-bench-state-")
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf: %v\n", err)
		return 2
	}
	defer os.RemoveAll(state)
	eng := app.Open(app.Options{LedgerPath: filepath.Join(state, "ledger.db")})
	defer eng.Close()
	return b.run(ctx, eng, args[1:], stdout, stderr)
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}
