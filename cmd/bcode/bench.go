package main

import (
	"context"
	"io"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/engine/app"
)

func init() {
	register(command{
		name:    "bench",
		summary: "evaluate bcode: graded suites, scorecards with intervals, the regression gate (docs/evaluation.md)",
		run:     cmdBench,
	})
}

// benchSub is one bcode bench subcommand; each lives in its own
// bench_*.go file and adds itself with registerBench.
type benchSub struct {
	name, summary string
	run           subcommand
}

var benchSubs []benchSub

func registerBench(s benchSub) { benchSubs = append(benchSubs, s) }

// benchGroup is bcode bench, built from the registered subcommands.
func benchGroup() commandGroup {
	subs := map[string]subcommand{}
	sorted := append([]benchSub(nil), benchSubs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var about strings.Builder
	for _, s := range sorted {
		subs[s.name] = s.run
		about.WriteString("  " + s.name + strings.Repeat(" ", max(1, 11-len(s.name))) + s.summary + "\n")
	}
	about.WriteString("\ndocs/evaluation.md says how to evaluate a change with these, and documents the formats.")
	return commandGroup{name: "bcode bench", about: about.String(), subs: subs}
}

func cmdBench(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	return benchGroup().run(ctx, eng, args, stdout, stderr)
}
