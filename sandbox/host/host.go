// Package host is the sandbox backend that runs commands as host processes.
// It is not isolation: it is what `bcode check` uses on the user's own
// change. What it does guarantee is a scrubbed environment (no tokens or
// keys of the user's shell reach the tests), a process group that is killed
// as a whole on timeout or cancellation, and capped output.
package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// passThrough are the variables a toolchain needs to find itself and its
// caches. Everything else in the caller's environment is dropped.
var passThrough = []string{
	"PATH", "LANG", "LC_ALL", "TZ", "TMPDIR",
	// Go: reuse the user's module and build caches, proxy and toolchain choice.
	"GOROOT", "GOPATH", "GOCACHE", "GOMODCACHE", "GOPROXY", "GONOSUMDB", "GONOSUMCHECK",
	"GOPRIVATE", "GONOPROXY", "GOSUMDB", "GOTOOLCHAIN", "GOFLAGS", "GOINSECURE",
	// Python: the interpreter the user chose.
	"VIRTUAL_ENV", "PYENV_ROOT", "PYENV_VERSION",
}

// Runner runs commands on the host.
type Runner struct {
	// Home is the HOME given to commands; empty means a fresh temporary
	// directory per Runner, so tools do not read the user's dotfiles.
	Home string
	// Extra variables added to every command ("KEY=value").
	Extra []string

	once    sync.Once
	homeErr error
	base    []string
}

// New returns a host runner with a scrubbed environment.
func New() *Runner { return &Runner{} }

// Name implements sandbox.Runner.
func (r *Runner) Name() string { return "host" }

func (r *Runner) init() {
	r.once.Do(func() {
		if r.Home == "" {
			d, err := sharedHome()
			if err != nil {
				r.homeErr = err
				return
			}
			r.Home = d
		}
		// Resolve the Go caches before HOME changes: they default to
		// paths under the user's real home, which we want to keep reusing.
		env := []string{"HOME=" + r.Home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}
		for _, k := range passThrough {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
		env = append(env, goCacheDefaults()...)
		env = append(env, scratchEnv()...)
		r.base = append(env, r.Extra...)
	})
}

// sharedHome is one empty HOME per user for every command bcode runs on the
// host: tools then read none of the user's dotfiles, and no directory is
// left behind per run. It refuses a path another user could have planted.
func sharedHome() (string, error) {
	d := filepath.Join(os.TempDir(), fmt.Sprintf("bcode-home-%d", os.Getuid()))
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !ownedByMe(fi) {
		return "", fmt.Errorf("%s is not a private directory of this user: remove it", d)
	}
	return d, nil
}

// goCacheDefaults pins GOCACHE, GOMODCACHE and GOPATH to the caller's
// effective values when they are not set explicitly, because the scrubbed
// HOME would otherwise move them and every run would rebuild the world.
func goCacheDefaults() []string {
	var out []string
	home, _ := os.UserHomeDir()
	cache, _ := os.UserCacheDir()
	if os.Getenv("GOPATH") == "" && home != "" {
		out = append(out, "GOPATH="+home+"/go")
	}
	if os.Getenv("GOMODCACHE") == "" {
		gp := os.Getenv("GOPATH")
		if gp == "" && home != "" {
			gp = home + "/go"
		}
		if gp != "" {
			out = append(out, "GOMODCACHE="+strings.Split(gp, string(os.PathListSeparator))[0]+"/pkg/mod")
		}
	}
	if os.Getenv("GOCACHE") == "" && cache != "" {
		out = append(out, "GOCACHE="+cache+"/go-build")
	}
	return out
}

// scratchEnv marks every command with this process's scratch owner id, so
// a sweep after bcode was killed finds what it left running, and points its
// temporary files (TMPDIR; GOTMPDIR for go build's work directories) into
// this process's scratch directory, which the same sweep removes. Without
// a usable scratch root the command keeps the caller's TMPDIR.
func scratchEnv() []string {
	env := []string{scratch.Env()}
	if tmp, err := scratch.TempDir(); err == nil {
		env = append(env, "TMPDIR="+tmp, "GOTMPDIR="+tmp)
	}
	return env
}

// Env returns the environment a command would get (for tests and doctor).
func (r *Runner) Env(extra []string) []string {
	r.init()
	return mergeEnv(r.base, extra)
}

func mergeEnv(base, extra []string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range append(append([]string(nil), base...), extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// Run implements sandbox.Runner.
func (r *Runner) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	r.init()
	if r.homeErr != nil {
		return sandbox.Result{}, fmt.Errorf("host runner: %w", r.homeErr)
	}
	if len(c.Args) == 0 {
		return sandbox.Result{}, errors.New("host runner: empty command")
	}
	env := mergeEnv(r.base, c.Env)
	bin, err := lookPath(c.Args[0], env)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("%s: %w", c.Args[0], sandbox.ErrNotFound)
	}
	parent := ctx
	var deadline time.Time
	if c.Timeout > 0 {
		deadline = time.Now().Add(c.Timeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = sandbox.DefaultOutputLimit
	}
	stdout := sandbox.NewCappedOutput(limit, c.Stdout)
	stderr := sandbox.NewCappedOutput(limit, c.Stderr)
	merged := c.OneStream()

	cmd := exec.Command(bin, c.Args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = env
	cmd.Stdin = c.Stdin
	// A Stdin reader that never ends must not keep Run waiting after the
	// process has exited.
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	if merged {
		// One writer given to exec.Cmd twice is one pipe for both.
		cmd.Stderr = stdout
	}
	setProcessGroup(cmd)
	began := time.Now()
	forget, err := start(cmd)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("start %s: %w", c.Args[0], err)
	}
	defer forget()
	if c.CPULimit > 0 {
		if err := limitCPU(cmd.Process.Pid, c.CPULimit); err != nil {
			killGroup(cmd)
			_ = cmd.Wait()
			return sandbox.Result{}, fmt.Errorf("host runner: setting the CPU limit: %w", err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		killGroup(cmd)
		werr = <-done
	}
	ended := time.Now()
	res := sandbox.Result{
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Cut() || stderr.Cut(),
		Duration:  time.Since(began),
		ExitCode:  cmd.ProcessState.ExitCode(),
	}
	// Past the deadline is a timeout even when the process ended before
	// the context's timer ran (a busy scheduler runs timers late): the
	// answer is the clock's, not the order two goroutines were woken in.
	late := !deadline.IsZero() && !ended.Before(deadline)
	if ctx.Err() != nil || late {
		if parent.Err() == nil { // our own timeout, not the caller's cancellation
			res.TimedOut = true
			return res, nil
		}
		return res, ctx.Err()
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return res, werr
	}
	if res.ExitCode < 0 { // killed by a signal we did not send
		res.ExitCode = 128 + int(signalOf(cmd))
		res.CPULimited = c.CPULimit > 0 && cpuLimited(cmd, c.CPULimit)
	}
	return res, nil
}

func signalOf(cmd *exec.Cmd) syscall.Signal {
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// lookPath finds name on the PATH of the command's environment rather than
// the caller's.
func lookPath(name string, env []string) (string, error) {
	if strings.ContainsRune(name, '/') {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, string(os.PathListSeparator)) {
		if dir == "" {
			dir = "."
		}
		p := dir + string(os.PathSeparator) + name
		if runtime.GOOS == "windows" {
			p += ".exe"
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}
