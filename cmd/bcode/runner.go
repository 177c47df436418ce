package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

func init() {
	register(command{
		name:    "runner",
		summary: "a long-running worker: claim runnable tasks from the (shared) ledger and run them",
		run:     cmdRunner,
	})
}

const runnerAbout = `Claims the oldest runnable task in the ledger (queued, or left by a runner that
died), runs it to its end, and claims the next, until interrupted. Several
runners on several machines share one Postgres ledger (--ledger
postgres://user@host/db, or $BCODE_LEDGER, or ~/.config/bcode/ledger); each
task is run by one of them at a time, and a runner's worktrees stay on its
own machine under --state. --sessions ENDPOINT=N records in the ledger that
at most N agent sessions use the model at ENDPOINT at once (the GPU's share);
every runner sharing the ledger obeys it.`

func cmdRunner(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode runner [--ledger URL] [--state DIR] [--sessions ENDPOINT=N]... [--poll DUR] [--once]", stdout, stderr)
	fs.about = runnerAbout
	var st stateFlags
	st.register(fs.FlagSet)
	var sessions multiFlag
	fs.Var(&sessions, "sessions", "`ENDPOINT=N`: at most N agent sessions at once on the model at ENDPOINT (0 removes the limit); repeatable")
	poll := fs.Duration("poll", 2*time.Second, "how long (`DUR`) an idle runner waits before looking for work again")
	once := fs.Bool("once", false, "run at most one task, then exit (exit 3 when there was none)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	type limit struct {
		endpoint string
		n        int
	}
	var limits []limit
	for _, s := range sessions {
		endpoint, n, ok := strings.Cut(s, "=")
		l, err := strconv.Atoi(n)
		if !ok || endpoint == "" || err != nil {
			return fs.usageErr("--sessions %q: give ENDPOINT=N, e.g. --sessions http://gpu:8080=2", s)
		}
		limits = append(limits, limit{endpoint, l})
	}
	if err := st.use(eng); err != nil {
		errorf(stderr, "bcode runner", "%v", err)
		return 1
	}
	for _, l := range limits {
		if err := eng.SetSessionLimit(ctx, l.endpoint, l.n); err != nil {
			if runnerStopped(ctx, stderr) {
				return 0
			}
			errorf(stderr, "bcode runner", "%v", err)
			return 1
		}
	}
	opts := app.WorkerOptions{
		Poll:    *poll,
		OnEvent: func(ev engine.Event) { printEvent(stdout, ev) },
		OnStart: func(w app.WorkerStart) {
			if w.Reaped > 0 {
				fmt.Fprintf(stdout, "bcode runner: removed %d containers that bcode processes killed earlier left\n", w.Reaped)
			}
			fmt.Fprintf(stdout, "bcode runner %s: claiming tasks; worktrees under %s\n", w.Owner, w.Worktrees)
		},
		OnResult: func(res *app.RunResult, err error) { report(stdout, stderr, res, err) },
	}
	if *once {
		res, err := eng.RunNext(ctx, opts)
		switch {
		case errors.Is(err, app.ErrNothingRunnable):
			fmt.Fprintln(stderr, "bcode runner: no runnable task")
			return 3
		case err != nil && res == nil:
			errorf(stderr, "bcode runner", "%v", err)
			return 1
		}
		return report(stdout, stderr, res, err)
	}
	if err := eng.ServeWorker(ctx, opts); err != nil {
		if runnerStopped(ctx, stderr) {
			return 0
		}
		errorf(stderr, "bcode runner", "%v", err)
		return 1
	}
	runnerStopped(ctx, stderr)
	return 0
}

// runnerStopped says so when a signal stopped the runner (a service
// manager's SIGTERM is how a runner ends: exit 0), naming the signal.
func runnerStopped(ctx context.Context, stderr io.Writer) bool {
	cause := context.Cause(ctx)
	if !errors.Is(cause, errInterrupted) {
		return false
	}
	fmt.Fprintf(stderr, "bcode runner: stopped: %s\n", cause)
	return true
}

func report(stdout, stderr io.Writer, res *app.RunResult, err error) int {
	if errors.Is(err, app.ErrStopped) && res != nil {
		fmt.Fprintln(stderr, stoppedMessage(res.Task.ID, err))
		return 130
	}
	if err != nil {
		errorf(stderr, "bcode runner", "%v", err)
		return 1
	}
	fmt.Fprintf(stdout, "task %s: %s %s\n", res.Task.ID, res.Task.Status, shown.Line(res.Task.Reason))
	return 0
}
