// Command bcode-ls is bcode's language server: evidence diagnostics, code
// actions, tasks and context packs in any LSP editor.
//
//	bcode-ls --stdio               serve one client on stdin/stdout (editors, bcode ci)
//	bcode-ls --listen 127.0.0.1:0  serve clients over TCP (debugging; loopback only
//	                               unless --allow-remote)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/server"
)

func main() {
	// As bcode does: sweep what killed servers and commands left, and on the
	// way out (exit, with or without shutdown; stdin closed) kill what this
	// server still runs and remove its scratch directory.
	if _, err := scratch.Sweep(); err != nil {
		fmt.Fprintf(os.Stderr, "bcode-ls: sweeping scratch space: %v\n", err)
	}
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	scratch.Release()
	os.Exit(code)
}

// stdio joins stdin and stdout into the one stream LSP runs over.
type stdio struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (s stdio) Close() error {
	var first error
	for _, c := range s.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// softMemoryLimit is the Go heap size past which the collector runs
// sooner than GOGC alone would make it (GOMEMLIMIT in the environment
// replaces it). An editor's server mostly idles with a small heap; its
// peak is the first index of a large module, whose garbage GOGC=100 lets
// grow to twice what is live. On golang.org/x/tools the limit took the
// peak RSS from 143-164 MiB to 138 MiB with the first pack no slower
// (docs/lsp.md). It is soft: a larger live heap is served, not refused.
const softMemoryLimit = 120 << 20

func run(args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) int {
	// The log is shown in the editor's output panel: it goes through
	// shown.Writer like every other byte bcode shows (the LSP stream itself
	// is sanitised message by message in server/lsp).
	shownErr := shown.NewWriter(stderr)
	defer shownErr.Flush()
	stderr = shownErr
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
	fs := flag.NewFlagSet("bcode-ls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	useStdio := fs.Bool("stdio", false, "serve one client over stdin and stdout")
	listen := fs.String("listen", "", "serve clients over TCP at ADDR (for debugging)")
	allowRemote := fs.Bool("allow-remote", false, "let --listen use an address that is not loopback (anyone who reaches it can run tests in your workspace)")
	debounce := fs.Duration("debounce", server.DefaultDebounce, "quiet time after a save before evidence runs")
	workers := fs.Int("workers", 0, "parallel mutant runs (default: the number of CPUs)")
	noWatch := fs.Bool("no-watch", false, "do not watch the workspace on disk (saves still trigger runs)")
	noAuto := fs.Bool("no-evidence-on-save", false, "run evidence only when asked (bcode.evidence.run); also no run at start")
	noOpen := fs.Bool("no-evidence-on-open", false, "no evidence run when the workspace opens (the first run waits for a save)")
	verbose := fs.Bool("v", false, "log debug detail to stderr")
	ledgerURL := fs.String("ledger", "", "the task ledger: a postgres:// URL shared with other runners, or \"sqlite\" (default: $BCODE_LEDGER, ~/.config/bcode/ledger, else the SQLite file in the state directory)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bcode-ls --stdio | --listen ADDR [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bcode-ls: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *useStdio == (*listen != "") {
		fmt.Fprintln(stderr, "bcode-ls: pass exactly one of --stdio or --listen ADDR")
		fs.Usage()
		return 2
	}
	if *workers < 0 || *workers > 1024 {
		fmt.Fprintf(stderr, "bcode-ls: --workers %d is out of range: give a whole number from 0 to 1024\n", *workers)
		return 2
	}
	if *debounce < 0 || *debounce > time.Minute {
		fmt.Fprintf(stderr, "bcode-ls: --debounce %s is out of range: give a duration from 0s to 1m0s\n", *debounce)
		return 2
	}
	choice, err := app.ResolveLedger(*ledgerURL)
	if err != nil {
		fmt.Fprintf(stderr, "bcode-ls: %v\n", err)
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	// stdout carries the protocol: the log goes to stderr only.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// One engine for the process, shared by every connection: one ledger
	// handle, one secret scanner, the agent injected here.
	eng := app.Open(app.Options{Agent: agentbackend.Backend, Ledger: choice, By: "bcode-ls"})
	defer eng.Close()
	opts := server.Options{App: eng, Debounce: *debounce, Workers: *workers, NoWatch: *noWatch, NoEvidenceOnSave: *noAuto, NoEvidenceOnOpen: *noOpen, Log: log}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *useStdio {
		if err := server.Serve(ctx, stdio{Reader: stdin, Writer: stdout, closers: []io.Closer{stdin, stdout}}, opts); err != nil {
			if errors.Is(err, server.ErrExitWithoutShutdown) {
				log.Info("the client sent exit without shutdown; exiting with status 1")
				return 1
			}
			log.Error("connection ended", "err", err)
			return 1
		}
		return 0
	}
	return serveTCP(ctx, *listen, *allowRemote, opts, log, stderr)
}

func serveTCP(ctx context.Context, addr string, allowRemote bool, opts server.Options, log *slog.Logger, stderr io.Writer) int {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "bcode-ls: --listen %q: %v (use HOST:PORT, e.g. 127.0.0.1:4389)\n", addr, err)
		return 2
	}
	if !allowRemote && !loopback(host) {
		fmt.Fprintf(stderr, "bcode-ls: --listen %s is not a loopback address; a client there could run code in your workspace. Use 127.0.0.1 or pass --allow-remote\n", addr)
		return 2
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "bcode-ls: %v\n", err)
		return 1
	}
	defer ln.Close()
	fmt.Fprintf(stderr, "bcode-ls: listening on %s\n", ln.Addr())
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return 0
			}
			fmt.Fprintf(stderr, "bcode-ls: %v\n", err)
			return 1
		}
		go func() {
			defer c.Close()
			log.Info("client connected", "addr", c.RemoteAddr())
			if err := server.Serve(ctx, c, opts); err != nil {
				log.Warn("connection ended", "addr", c.RemoteAddr(), "err", err)
			}
		}()
	}
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
