// Command bcode is the command-line face of bcode: verify a change
// (`bcode check`), show the mutants its tests miss (`bcode evidence`), build
// a context pack (`bcode pack`) and run tasks (`bcode task ...`).
//
// Each subcommand lives in its own file and registers itself; this file only
// dispatches and holds the flags every subcommand shares.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

// command is one subcommand. run returns the process exit code; it prints
// its own errors, in words a user can act on.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("bcode: duplicate subcommand " + c.name)
	}
	commands[c.name] = c
}

const mainUsage = "bcode [--cache DIR] COMMAND [ARG...]"

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n", mainUsage)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  --cache DIR  keep every cache of bcode's in DIR (default $BCODE_CACHE, else $XDG_CACHE_HOME/bcode);")
	fmt.Fprintln(w, "               an empty DIR is a cold start for all of them. Go's own build cache is not moved.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'bcode COMMAND -h' (or 'bcode help COMMAND') for a command's help.")
}

func main() {
	// What a killed bcode left (snapshots, build directories, test
	// processes still running) goes first; what this one makes goes on the
	// way out, including after Ctrl-C, which run turns into a return. The
	// stable directories a killed holder left are swept beside the command
	// (walking them all took bcode pack ~50 ms on a machine with a thousand),
	// and the command waits for that sweep before it exits.
	stableSwept := make(chan error, 1)
	if _, err := scratch.SweepOwners(); err != nil {
		fmt.Fprintf(os.Stderr, "bcode: sweeping scratch space: %v\n", err)
		stableSwept <- nil
	} else {
		go func() {
			_, err := scratch.SweepStable()
			stableSwept <- err
		}()
	}
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	if err := <-stableSwept; err != nil {
		fmt.Fprintf(os.Stderr, "bcode: sweeping scratch space: %v\n", err)
	}
	scratch.Release()
	os.Exit(code)
}

// signalContext is cancelled by the first SIGINT or SIGTERM, with a cause
// that names it ("interrupted by SIGTERM"), which a stopped task records
// and the command prints. A second signal, or a clean stop that takes
// longer than stopGrace, exits at once: the lease of a process that is
// gone is taken over at once by the next run, and its containers end with
// it (sandbox/docker's supervisor).
func signalContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(fmt.Errorf("%w by %s", errInterrupted, signalName(s)))
		case <-done:
			return
		}
		select {
		case s := <-ch:
			fmt.Fprintf(stderr, "bcode: %s again: exiting without finishing the clean stop\n", signalName(s))
		case <-time.After(stopGrace):
			fmt.Fprintf(stderr, "bcode: the clean stop took over %s: exiting\n", stopGrace)
		case <-done:
			return
		}
		scratch.Release()
		os.Exit(130)
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// stopGrace bounds a clean stop after a signal: the task runner's own
// cleanup is bounded by less (cleanupTimeout), so this only cuts a stop
// that hangs.
const stopGrace = 5 * time.Second

// errInterrupted is the cause of a signal's cancellation. It is
// context.Canceled too, as signal.NotifyContext's is.
var errInterrupted = interrupted{}

type interrupted struct{}

func (interrupted) Error() string        { return "interrupted" }
func (interrupted) Is(target error) bool { return target == context.Canceled }

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// run wraps stdout and stderr in shown.Writer once, here: every byte any
// subcommand prints (names, diff lines, test output, reasons, model text
// from the worktree or the agent) reaches the terminal with its controls,
// escape sequences and bidi overrides made visible, and no subcommand can
// forget to. A field inside one line also goes through shown.Line, so a
// newline in it cannot start a line of its own.
func run(args []string, stdout, stderr io.Writer) int {
	out, errOut := shown.NewWriter(stdout), shown.NewWriter(stderr)
	defer errOut.Flush()
	defer out.Flush()
	return dispatch(args, out, errOut)
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	args, code, ok := cacheFlag(args, stderr)
	if !ok {
		return code
	}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "-help":
		usage(stdout)
		return 0
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		// bcode help task create is bcode task create -h.
		args = append(args[1:len(args):len(args)], "-h")
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "bcode: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	// Ctrl-C and SIGTERM cancel the context: long work ends its current
	// step cleanly instead of dying mid-write.
	ctx, stop := signalContext(stderr)
	defer stop()
	// One engine for the process: the subcommand's --state and --ledger
	// point it at a ledger (stateFlags.use), which it opens at most once;
	// the agent is injected here, not found in a registry.
	eng := app.Open(app.Options{Agent: agentbackend.Backend, By: userName()})
	defer eng.Close()
	code = c.run(ctx, eng, args[1:], stdout, stderr)
	// A signal that came before a command could say so itself (while the
	// ledger opens, say) still ends with the signal named, as a stop.
	if cause := context.Cause(ctx); code != 0 && code != 130 && errors.Is(cause, errInterrupted) {
		fmt.Fprintf(stderr, "bcode: %s %s: stopped\n", args[0], cause)
		return 130
	}
	return code
}

// cacheFlag takes a leading --cache DIR (or --cache=DIR) off args and
// points every cache of bcode's there for this process and all it starts
// (app.UseCacheDir). It comes before the command so that one flag covers
// every command alike.
func cacheFlag(args []string, stderr io.Writer) ([]string, int, bool) {
	if len(args) == 0 {
		return args, 0, true
	}
	var dir string
	switch a := args[0]; {
	case a == "--cache" || a == "-cache":
		if len(args) < 2 || args[1] == "" {
			fmt.Fprintf(stderr, "bcode: --cache needs a directory\nusage: %s\n", mainUsage)
			return nil, exitUsage, false
		}
		dir, args = args[1], args[2:]
	case strings.HasPrefix(a, "--cache=") || strings.HasPrefix(a, "-cache="):
		_, dir, _ = strings.Cut(a, "=")
		args = args[1:]
		if dir == "" {
			fmt.Fprintf(stderr, "bcode: --cache needs a directory\nusage: %s\n", mainUsage)
			return nil, exitUsage, false
		}
	default:
		return args, 0, true
	}
	if err := app.UseCacheDir(dir); err != nil {
		fmt.Fprintf(stderr, "bcode: --cache %s: %v\n", shown.Line(dir), err)
		return nil, 1, false
	}
	return args, 0, true
}
