package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

// createGoal is the goal `task create` takes: its one argument, or none
// with --reproduce (the task makes one from the tests), and what is wrong
// otherwise.
func createGoal(args []string, reproduce string) (goal, usage string) {
	switch {
	case len(args) == 1:
		return args[0], ""
	case len(args) == 0 && strings.TrimSpace(reproduce) != "":
		return "", ""
	case len(args) == 0:
		return "", "give the goal as one quoted argument, or a failing test command with --reproduce"
	}
	return "", "give the goal as one quoted argument"
}

// printOracle shows the task's reproduction and the level of its last
// check in `task status`.
func printOracle(w io.Writer, o *engine.Oracle, reached, required, missing string) {
	if o != nil {
		fmt.Fprintf(w, "reproduce\t%s\n", shown.Line(o.Command))
		if !o.Pinned() {
			fmt.Fprintf(w, "oracle\tnot pinned yet: the run reproduces it on the base first\n")
		}
		for _, t := range o.Tests {
			fmt.Fprintf(w, "oracle\t%s\n", shown.Line(t.ID()))
		}
		for _, f := range o.Files {
			fmt.Fprintf(w, "oracle file\t%s (sha256 %.12s)\n", shown.Line(f.Path), f.SHA256)
		}
	}
	if reached != "" {
		line := fmt.Sprintf("%s reached, %s required", reached, required)
		if missing != "" {
			line += "; missing for " + missing
		}
		fmt.Fprintf(w, "level\t%s\n", shown.Line(line))
	}
}
