// Command bcode-bench runs bcode's side-by-side benchmarks and prints their
// tables: each benchmark runs bcode and its baselines in one process, one
// after the other on the same inputs, and reports ratios, because absolute
// times on a shared two-core machine mean little.
//
// Each benchmark lives in its own file and registers itself.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

type benchmark struct {
	name    string
	summary string
	run     func(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int
}

var benchmarks = map[string]benchmark{}

func register(b benchmark) {
	if _, dup := benchmarks[b.name]; dup {
		panic("bcode-bench: duplicate benchmark " + b.name)
	}
	benchmarks[b.name] = b
}

func main() {
	args := os.Args[1:]
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(os.Stderr, "usage: bcode-bench <benchmark> [flags]")
		names := make([]string, 0, len(benchmarks))
		for n := range benchmarks {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, benchmarks[n].summary)
		}
		os.Exit(2)
	}
	b, ok := benchmarks[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "bcode-bench: unknown benchmark %q\n", args[0])
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// One engine for the process, as in bcode and bcode-ls, with a ledger
	// of its own: the checks a benchmark runs are recorded as bcode records
	// them, never in the user's ledger.
	state, err := os.MkdirTemp("", "bcode-bench-state-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "bcode-bench: %v\n", err)
		os.Exit(2)
	}
	eng := app.Open(app.Options{LedgerPath: filepath.Join(state, "ledger.db")})
	// Reports name cases, tests and files and quote what tests and models
	// printed: stdout and stderr go through shown.Writer, as in bcode.
	stdout, stderr := shown.NewWriter(os.Stdout), shown.NewWriter(os.Stderr)
	code := b.run(ctx, eng, args[1:], stdout, stderr)
	stdout.Flush()
	stderr.Flush()
	eng.Close()
	os.RemoveAll(state)
	stop()
	os.Exit(code)
}
