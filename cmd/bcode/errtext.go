package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/bcode-dev/bcode/sandbox/shown"
)

// errorf prints a subcommand's error. format is bcode's own words; each
// argument (an error, or a string that quotes one) may carry text from the
// worktree or a tool (a file name, a compiler's output), so it is shown as
// shown.Text with every line after its first marked "  | ": its lines stay
// readable, and a newline in it cannot start a line that looks like one of
// bcode's own records (a FINDING line, a table row) or that a CI runner
// reads as a workflow command.
func errorf(w io.Writer, cmd, format string, a ...any) {
	fmt.Fprintf(w, cmd+": "+format+"\n", shownArgs(a)...)
}

func shownArgs(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		switch v := v.(type) {
		case error:
			out[i] = errorBlock(v.Error())
		case string:
			out[i] = errorBlock(v)
		default:
			out[i] = v
		}
	}
	return out
}

func errorBlock(s string) string {
	return strings.ReplaceAll(shown.Text(s), "\n", "\n  | ")
}
