// Package runnertest is the conformance suite every sandbox.Runner backend
// passes, in the style of river's riverdrivertest: one set of behaviours —
// exit codes, captured and capped output, timeouts that kill the whole
// process tree, cancellation, a scrubbed environment, the working
// directory, a missing executable, standard input — run against the host
// runner and the Docker runner alike, so the gate can swap one for the
// other without noticing.
//
// A backend's test calls Run with a constructor and a directory the runner
// can work in:
//
//	runnertest.Run(t, func(t *testing.T) sandbox.Runner { return host.New() },
//		runnertest.Options{Dir: func(t *testing.T) string { return t.TempDir() }})
//
// The commands the suite runs are POSIX sh, env, cat, head, wc, sleep and
// pwd, looked up on the runner's own PATH.
package runnertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// Options adapts the suite to a backend.
type Options struct {
	// Dir returns a fresh directory that the runner can use as a working
	// directory and that the test can read and write on the host. A
	// container runner returns one inside the worktree it mounts.
	Dir func(t *testing.T) string
	// Slack is extra time allowed for a command to start and be torn down
	// (a container's create, start and remove). Zero means 10 seconds.
	Slack time.Duration
	// NoCPULimit: the runner cannot set Command.CPULimit here (sandbox/host
	// off Linux); the suite checks only that a command still runs.
	NoCPULimit bool
}

// secretName and secretValue are put into the test process's environment;
// no runner may pass them on.
const (
	secretName  = "BCODE_RUNNERTEST_API_TOKEN"
	secretValue = "rt-secret-5d1c9a7e0b"
	awsValue    = "rt-aws-8f2e4c6a1d"
)

// Run runs the conformance suite. newRunner is called once per subtest;
// runners are used concurrently by parallel subtests.
func Run(t *testing.T, newRunner func(t *testing.T) sandbox.Runner, opts Options) {
	if opts.Dir == nil {
		t.Fatal("runnertest: Options.Dir is required")
	}
	if opts.Slack <= 0 {
		opts.Slack = 10 * time.Second
	}
	// Set before any runner exists: a runner that snapshots the caller's
	// environment at construction would otherwise never see them.
	t.Setenv(secretName, secretValue)
	t.Setenv("AWS_SECRET_ACCESS_KEY", awsValue)
	s := &suite{newRunner: newRunner, opts: opts}
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"ExitCodes", s.exitCodes},
		{"StdoutStderr", s.stdoutStderr},
		{"OneStream", s.oneStream},
		{"OutputLimit", s.outputLimit},
		{"TimeoutKillsProcessTree", s.timeoutKillsTree},
		{"CPULimit", s.cpuLimit},
		{"ContextCancel", s.contextCancel},
		{"EnvScrubbed", s.envScrubbed},
		{"Dir", s.dir},
		{"NotFound", s.notFound},
		{"Stdin", s.stdin},
		{"Interactive", s.interactive},
		{"EmptyCommand", s.emptyCommand},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t)
		})
	}
}

type suite struct {
	newRunner func(t *testing.T) sandbox.Runner
	opts      Options
}

func (s *suite) run(t *testing.T, r sandbox.Runner, c sandbox.Command) sandbox.Result {
	t.Helper()
	if c.Dir == "" {
		c.Dir = s.opts.Dir(t)
	}
	res, err := r.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("%s: Run(%q): %v", r.Name(), c.Args, err)
	}
	return res
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func (s *suite) exitCodes(t *testing.T) {
	r := s.newRunner(t)
	for _, c := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 255", 255},
		{"false", 1},
		// A shell killed by a signal reports 128+signal, as shells do.
		{"kill -TERM $$", 143},
	} {
		res := s.run(t, r, sandbox.Command{Args: sh(c.script), Timeout: time.Minute})
		if res.ExitCode != c.want {
			t.Errorf("%s: %q exited %d, want %d (stderr %q)", r.Name(), c.script, res.ExitCode, c.want, res.Stderr)
		}
		if res.TimedOut || res.Truncated {
			t.Errorf("%s: %q: TimedOut=%v Truncated=%v, want both false", r.Name(), c.script, res.TimedOut, res.Truncated)
		}
		if res.Duration <= 0 {
			t.Errorf("%s: %q: Duration %v, want > 0", r.Name(), c.script, res.Duration)
		}
	}
}

func (s *suite) stdoutStderr(t *testing.T) {
	r := s.newRunner(t)
	var teeOut, teeErr bytes.Buffer
	res := s.run(t, r, sandbox.Command{
		Args:   sh(`printf 'out line 1\nout line 2\n'; printf 'err: bad\n' >&2; printf 'tail'; exit 7`),
		Stdout: &teeOut, Stderr: &teeErr, Timeout: time.Minute,
	})
	if got, want := string(res.Stdout), "out line 1\nout line 2\ntail"; got != want {
		t.Errorf("%s: Stdout = %q, want %q", r.Name(), got, want)
	}
	if got, want := string(res.Stderr), "err: bad\n"; got != want {
		t.Errorf("%s: Stderr = %q, want %q", r.Name(), got, want)
	}
	if res.ExitCode != 7 {
		t.Errorf("%s: ExitCode = %d, want 7", r.Name(), res.ExitCode)
	}
	if teeOut.String() != string(res.Stdout) || teeErr.String() != string(res.Stderr) {
		t.Errorf("%s: the Stdout/Stderr writers got %q / %q, want the same as the result", r.Name(), teeOut.String(), teeErr.String())
	}
}

func (s *suite) outputLimit(t *testing.T) {
	r := s.newRunner(t)
	const limit = 1000
	// 200 KB on each stream: far past the limit, and past any pipe buffer,
	// so a runner that stopped reading at the limit would hang the command.
	res := s.run(t, r, sandbox.Command{
		Args:        sh(`head -c 200000 /dev/zero | tr '\0' o; head -c 200000 /dev/zero | tr '\0' e >&2; exit 4`),
		OutputLimit: limit, Timeout: time.Minute,
	})
	if len(res.Stdout) != limit || len(res.Stderr) != limit {
		t.Errorf("%s: kept %d bytes of stdout and %d of stderr, want %d each", r.Name(), len(res.Stdout), len(res.Stderr), limit)
	}
	if strings.Trim(string(res.Stdout), "o") != "" || strings.Trim(string(res.Stderr), "e") != "" {
		t.Errorf("%s: the kept output is not the start of each stream", r.Name())
	}
	if !res.Truncated {
		t.Errorf("%s: Truncated = false after cutting output", r.Name())
	}
	if res.ExitCode != 4 {
		t.Errorf("%s: ExitCode = %d, want 4: a cut stream must not kill the command", r.Name(), res.ExitCode)
	}
	// Exactly at the limit is not a cut.
	res = s.run(t, r, sandbox.Command{Args: sh(`head -c 1000 /dev/zero | tr '\0' o`), OutputLimit: limit, Timeout: time.Minute})
	if len(res.Stdout) != limit || res.Truncated {
		t.Errorf("%s: output of exactly the limit: kept %d, Truncated=%v; want %d, false", r.Name(), len(res.Stdout), res.Truncated, limit)
	}
}

func (s *suite) timeoutKillsTree(t *testing.T) {
	r := s.newRunner(t)
	dir := s.opts.Dir(t)
	// The grandchild appends to a heartbeat file until it is killed; the
	// direct child only sleeps. A runner that killed only the child would
	// leave the heartbeat growing.
	script := `(while :; do echo beat >> heartbeat; sleep 0.05; done) & sleep 120`
	// The timeout covers starting the command too (a container's create
	// and start take a second or more on a loaded machine), so it is set
	// from what a trivial command costs on this runner right now.
	startup := s.run(t, r, sandbox.Command{Dir: dir, Args: sh("exit 0"), Timeout: time.Minute}).Duration
	timeout := time.Second + 3*startup
	start := time.Now()
	res, err := r.Run(context.Background(), sandbox.Command{Dir: dir, Args: sh(script), Timeout: timeout})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s: a timeout is a result, not an error: %v", r.Name(), err)
	}
	if !res.TimedOut {
		t.Fatalf("%s: TimedOut = false after %v (exit %d, stderr %q)", r.Name(), took, res.ExitCode, res.Stderr)
	}
	if res.ExitCode == 0 {
		t.Errorf("%s: a killed command reported exit 0", r.Name())
	}
	if took > timeout+s.opts.Slack {
		t.Errorf("%s: Run returned %v after a %v timeout", r.Name(), took, timeout)
	}
	hb := filepath.Join(dir, "heartbeat")
	size := func() int64 {
		fi, err := os.Stat(hb)
		if err != nil {
			t.Fatalf("%s: the grandchild never wrote its heartbeat: %v", r.Name(), err)
		}
		return fi.Size()
	}
	before := size()
	if before == 0 {
		t.Fatalf("%s: the heartbeat is empty", r.Name())
	}
	time.Sleep(600 * time.Millisecond)
	if after := size(); after != before {
		t.Errorf("%s: the grandchild outlived the timeout: heartbeat grew from %d to %d bytes", r.Name(), before, after)
	}
}

// cpuLimit: a loop that only spins is ended by the kernel once it has used
// its CPU time, however long the machine makes it wait for a core, and is
// reported as CPULimited, not TimedOut; a command that only waits uses
// none and runs to its end.
func (s *suite) cpuLimit(t *testing.T) {
	r := s.newRunner(t)
	dir := s.opts.Dir(t)
	spin, err := r.Run(context.Background(), sandbox.Command{Dir: dir, Args: sh("while :; do :; done"), CPULimit: time.Second, Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatalf("%s: %v", r.Name(), err)
	}
	if s.opts.NoCPULimit {
		t.Logf("%s: no CPU limit here; the spinning loop ran until %s (timed out: %v)", r.Name(), spin.Duration, spin.TimedOut)
	} else if !spin.CPULimited || spin.TimedOut || spin.ExitCode == 0 {
		t.Errorf("%s: a spinning loop with a 1 s CPU limit: CPULimited %v, TimedOut %v, exit %d after %s; want CPULimited", r.Name(), spin.CPULimited, spin.TimedOut, spin.ExitCode, spin.Duration)
	}
	wait := s.run(t, r, sandbox.Command{Dir: dir, Args: sh("sleep 2; echo done"), CPULimit: time.Second, Timeout: time.Minute})
	if wait.CPULimited || wait.TimedOut || wait.ExitCode != 0 || strings.TrimSpace(string(wait.Stdout)) != "done" {
		t.Errorf("%s: a command that sleeps 2 s under a 1 s CPU limit: CPULimited %v, TimedOut %v, exit %d, stdout %q; want it to finish", r.Name(), wait.CPULimited, wait.TimedOut, wait.ExitCode, wait.Stdout)
	}
}

func (s *suite) contextCancel(t *testing.T) {
	r := s.newRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	res, err := r.Run(ctx, sandbox.Command{Dir: s.opts.Dir(t), Args: sh("echo started; sleep 120")})
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%s: err = %v, want context.Canceled", r.Name(), err)
	}
	if res.TimedOut {
		t.Errorf("%s: the caller's cancellation is not a timeout", r.Name())
	}
	if took > 1500*time.Millisecond+s.opts.Slack {
		t.Errorf("%s: Run returned %v after the cancel", r.Name(), took)
	}
	// A context already done never starts the command.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := r.Run(done, sandbox.Command{Dir: s.opts.Dir(t), Args: sh("exit 0")}); !errors.Is(err, context.Canceled) {
		t.Errorf("%s: Run on a done context: err = %v, want context.Canceled", r.Name(), err)
	}
}

func (s *suite) envScrubbed(t *testing.T) {
	r := s.newRunner(t)
	res := s.run(t, r, sandbox.Command{
		Args:    []string{"env"},
		Env:     []string{"BCODE_RT_ADDED=yes", "BCODE_RT_TWICE=first", "BCODE_RT_TWICE=second"},
		Timeout: time.Minute,
	})
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	out := string(res.Stdout)
	for _, leak := range []string{secretName, secretValue, "AWS_SECRET_ACCESS_KEY", awsValue} {
		if strings.Contains(out, leak) {
			t.Errorf("%s: the caller's %q reached the command's environment", r.Name(), leak)
		}
	}
	if env["BCODE_RT_ADDED"] != "yes" {
		t.Errorf("%s: Command.Env BCODE_RT_ADDED not set: env %q", r.Name(), out)
	}
	if env["BCODE_RT_TWICE"] != "second" || strings.Count(out, "BCODE_RT_TWICE=") != 1 {
		t.Errorf("%s: a repeated key must appear once with the last value, env %q", r.Name(), out)
	}
	if env["PATH"] == "" || env["HOME"] == "" {
		t.Errorf("%s: the base environment lacks PATH or HOME: %q", r.Name(), out)
	}
}

func (s *suite) dir(t *testing.T) {
	r := s.newRunner(t)
	dir := s.opts.Dir(t)
	sub := filepath.Join(dir, "sub dir")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "marker.txt"), []byte("here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := s.run(t, r, sandbox.Command{Dir: sub, Args: sh(`pwd -P; cat marker.txt; echo made > made.txt`), Timeout: time.Minute})
	want, err := filepath.EvalSymlinks(sub)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Stdout); got != want+"\nhere\n" {
		t.Errorf("%s: in Dir %s the command printed %q, want %q", r.Name(), sub, got, want+"\nhere\n")
	}
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d, stderr %q", r.Name(), res.ExitCode, res.Stderr)
	}
	// What the command writes in its directory is there for the host.
	if b, err := os.ReadFile(filepath.Join(sub, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("%s: the file the command wrote: %q, %v", r.Name(), b, err)
	}
}

// oneStream: with one writer for Stdout and Stderr, what the command
// wrote to the two arrives in the order it wrote it, with or without
// stdin, and a missing command is still sandbox.ErrNotFound.
func (s *suite) oneStream(t *testing.T) {
	r := s.newRunner(t)
	var want strings.Builder
	for i := range 200 {
		fmt.Fprintf(&want, "out%d\nerr%d\n", i, i)
	}
	script := `i=0; while [ $i -lt 200 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done`
	for _, stdin := range []io.Reader{nil, strings.NewReader("")} {
		var both bytes.Buffer
		res := s.run(t, r, sandbox.Command{Args: sh(script), Stdin: stdin, Stdout: &both, Stderr: &both, Timeout: time.Minute})
		if got := string(res.Stdout); got != want.String() {
			t.Errorf("%s (stdin %v): one stream holds %q..., want the lines in the order written", r.Name(), stdin != nil, firstLines(got, 6))
		}
		if len(res.Stderr) != 0 || both.String() != want.String() {
			t.Errorf("%s (stdin %v): Stderr %q, the writer got %q..., want nothing and the one stream", r.Name(), stdin != nil, res.Stderr, firstLines(both.String(), 6))
		}
		var w bytes.Buffer
		_, err := r.Run(context.Background(), sandbox.Command{Dir: s.opts.Dir(t), Args: []string{"bcode-no-such-command-4711"}, Stdin: stdin, Stdout: &w, Stderr: &w, Timeout: time.Minute})
		if !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("%s (stdin %v): a missing command on one stream: err = %v, want sandbox.ErrNotFound", r.Name(), stdin != nil, err)
		}
	}
}

// firstLines is s's first n lines.
func firstLines(s string, n int) string {
	lines := strings.SplitAfterN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "")
}

func (s *suite) notFound(t *testing.T) {
	r := s.newRunner(t)
	for _, name := range []string{"bcode-no-such-command-4711", "/nonexistent/bin/bcode-no-such-command"} {
		_, err := r.Run(context.Background(), sandbox.Command{Dir: s.opts.Dir(t), Args: []string{name, "arg"}, Timeout: time.Minute})
		if !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("%s: Run(%q): err = %v, want sandbox.ErrNotFound", r.Name(), name, err)
		}
	}
	// A command that exits 127 by itself is not a missing executable.
	res := s.run(t, r, sandbox.Command{Args: sh("exit 127"), Timeout: time.Minute})
	if res.ExitCode != 127 {
		t.Errorf("%s: exit 127: got %d", r.Name(), res.ExitCode)
	}
}

func (s *suite) stdin(t *testing.T) {
	r := s.newRunner(t)
	res := s.run(t, r, sandbox.Command{Args: []string{"cat"}, Stdin: strings.NewReader("hello\nworld\n"), Timeout: time.Minute})
	if got := string(res.Stdout); got != "hello\nworld\n" {
		t.Errorf("%s: cat echoed %q", r.Name(), got)
	}
	// More than any pipe buffer holds.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	res = s.run(t, r, sandbox.Command{Args: sh("wc -c"), Stdin: bytes.NewReader(big), Timeout: time.Minute})
	if got := strings.TrimSpace(string(res.Stdout)); got != strconv.Itoa(len(big)) {
		t.Errorf("%s: wc -c of 1 MiB of stdin printed %q", r.Name(), got)
	}
	// No Stdin: the command reads end of file at once instead of hanging.
	res = s.run(t, r, sandbox.Command{Args: []string{"cat"}, Timeout: 30 * time.Second})
	if res.TimedOut || res.ExitCode != 0 || len(res.Stdout) != 0 {
		t.Errorf("%s: cat without stdin: TimedOut=%v exit=%d stdout=%q", r.Name(), res.TimedOut, res.ExitCode, res.Stdout)
	}
}

// interactive holds a conversation over stdin and stdout: each answer must
// arrive before the next question is written, as a stdio protocol (the
// agent's JSON-RPC) needs.
func (s *suite) interactive(t *testing.T) {
	r := s.newRunner(t)
	inR, inW := io.Pipe()
	lines := make(chan string, 16)
	out := &lineWriter{lines: lines}
	done := make(chan error, 1)
	var res sandbox.Result
	go func() {
		var err error
		res, err = r.Run(context.Background(), sandbox.Command{Dir: s.opts.Dir(t), Args: sh(`while read -r l; do echo "got $l"; done; echo bye`), Stdin: inR, Stdout: out, Timeout: time.Minute})
		done <- err
	}()
	for i := 0; i < 3; i++ {
		q := "question " + strconv.Itoa(i)
		if _, err := io.WriteString(inW, q+"\n"); err != nil {
			t.Fatalf("%s: writing %q: %v", r.Name(), q, err)
		}
		select {
		case got := <-lines:
			if got != "got "+q {
				t.Fatalf("%s: answer %q to %q", r.Name(), got, q)
			}
		case <-time.After(s.opts.Slack + 5*time.Second):
			t.Fatalf("%s: no answer to %q while stdin stays open", r.Name(), q)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("%s: %v", r.Name(), err)
	}
	if !strings.HasSuffix(string(res.Stdout), "got question 2\nbye\n") || res.ExitCode != 0 {
		t.Errorf("%s: exit %d, stdout %q", r.Name(), res.ExitCode, res.Stdout)
	}
}

// lineWriter sends each complete line written to it.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.buf[:i]):
		default: // nobody is waiting for more lines
		}
		w.buf = w.buf[i+1:]
	}
}

func (s *suite) emptyCommand(t *testing.T) {
	r := s.newRunner(t)
	for _, args := range [][]string{nil, {}} {
		if _, err := r.Run(context.Background(), sandbox.Command{Dir: s.opts.Dir(t), Args: args}); err == nil {
			t.Errorf("%s: Run with args %q: no error", r.Name(), args)
		}
	}
}
