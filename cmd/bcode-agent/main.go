//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bcode-dev/bcode/engine/gateway/wire"
)

// version is reported in the handshake.
const version = "bcode-agent/0.1"

func main() {
	in, out, err := isolateChannel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bcode-agent:", err)
		os.Exit(2)
	}
	if os.Getpid() == 1 {
		go reapLoop(context.Background())
	}
	os.Exit(run(os.Args[1:], in, out, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	worktree := fs.String("worktree", "", "the attempt's worktree (default: the working directory)")
	termTimeout := fs.Duration("terminal-timeout", 120*time.Second, "default timeout of one terminal command")
	outputCap := fs.Int("output-cap", 16<<10, "bytes of a tool's output the model sees (head and tail kept)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dir := *worktree
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			fmt.Fprintln(stderr, "bcode-agent:", err)
			return 2
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintln(stderr, "bcode-agent:", err)
		return 2
	}
	tb, err := newToolbox(dir, *termTimeout, *outputCap)
	if err != nil {
		fmt.Fprintln(stderr, "bcode-agent:", err)
		return 2
	}
	defer tb.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &agent{conn: wire.NewConn(stdin, stdout), tools: tb, log: stderr}
	if err := a.run(ctx); err != nil {
		fmt.Fprintln(stderr, "bcode-agent:", err)
		return 1
	}
	return 0
}
