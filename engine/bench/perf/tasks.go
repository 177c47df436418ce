package perf

// The tasks benchmark: the kill loop of engine/runner at benchmark size.
// The loop lives in engine/runner's tests because its runner is the test
// binary re-executing itself (with a scripted agent that exists only
// there); this benchmark builds that test binary once with `go test -c`
// and runs it with BCODE_KILLS set, so the figures come from exactly the
// code the normal test run checks, only with more kills.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
)

func init() {
	register(benchmark{
		name:    "tasks",
		summary: "kill loop: SIGKILL task runners at random times and at every crash point, check recovery after each (default 1000 kills)",
		run:     benchTasks,
	})
}

func benchTasks(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode bench perf tasks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kills := fs.Int("kills", 1000, "how many runner processes to kill")
	module := fs.String("module", ".", "the bcode module root (where go.mod is)")
	timeout := fs.Duration("timeout", 3*time.Hour, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *kills < 1 {
		fmt.Fprintln(stderr, "bcode bench perf tasks: --kills must be at least 1")
		return 2
	}
	root, err := filepath.Abs(*module)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if _, err := os.Stat(filepath.Join(root, "engine", "runner")); err != nil {
		fmt.Fprintf(stderr, "bcode bench perf tasks: %s is not the bcode module root (run it there or pass --module)\n", root)
		return 2
	}
	if _, err := exec.LookPath("go"); err != nil {
		fmt.Fprintln(stderr, "bcode bench perf tasks: the go toolchain is needed to build the kill-loop runner (install Go)")
		return 2
	}
	tmp, err := os.MkdirTemp("", "bcode-bench-tasks-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "runner.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./engine/runner")
	build.Dir, build.Stdout, build.Stderr = root, stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "bcode bench perf tasks: building the runner test binary: %v\n", err)
		return 1
	}
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, bin, "-test.run=^TestKillLoop$", "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	cmd.Dir = filepath.Join(root, "engine", "runner")
	cmd.Env = append(os.Environ(), fmt.Sprintf("BCODE_KILLS=%d", *kills))
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var summary []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "kill loop") || strings.Contains(line, "kills per crash point") || strings.HasPrefix(line, "---") {
			summary = append(summary, line)
		}
		if strings.Contains(line, ".go:") && !strings.Contains(line, "kill loop") && !strings.Contains(line, "kills per") {
			fmt.Fprintln(stderr, line) // a failed invariant
		}
	}
	err = cmd.Wait()
	fmt.Fprintf(stdout, "bcode bench perf tasks: %d kills requested, %s wall\n", *kills, time.Since(start).Round(time.Second))
	for _, l := range summary {
		fmt.Fprintln(stdout, l)
	}
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf tasks: the kill loop failed: %v\n", err)
		return 1
	}
	return 0
}
