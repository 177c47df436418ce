package golang

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// runGo is mutate.Run with the Go engine alone.
func runGo(ctx context.Context, r sandbox.Runner, dir string, change *verify.Change, opts mutate.Options, p verify.Progress) (*mutate.Report, error) {
	opts.Engines = []mutate.Engine{New()}
	return mutate.Run(ctx, r, dir, change, opts, p)
}

// defaulted is o with the defaults mutate.Run gives a session's options.
func defaulted(o mutate.Options) *mutate.Options {
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.CompileTimeout <= 0 {
		o.CompileTimeout = config.DefaultCompileTimeout
	}
	return &o
}

// lineOf returns the 1-based line of the first line of content containing s.
func lineOf(t *testing.T, content, s string) int {
	t.Helper()
	for i, l := range strings.Split(content, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not found", s)
	return 0
}
