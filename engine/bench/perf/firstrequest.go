package perf

// The first-request benchmark (issue 34, part 2): how long after `bcode
// task run` starts does the agent's first model request reach the model
// server, on real modules, with bcode's caches empty and the sandbox image
// built — and what the time went to.
//
// Each module becomes a git repository (a committed bundle of real
// history, or a released version from the module proxy) with a
// .bcode/config.toml naming the scripted model server (modeltest, the one
// sanctioned stand-in for a model) and the sandbox image. The real bcode
// CLI runs `bcode task create` and `bcode task run` in it, with a fresh
// HOME, XDG_CACHE_HOME (bcode's index, Go tool and sandbox seed caches)
// and state directory, and the user's own Go module and build caches. The
// phases come from the task's ledger events (task.started,
// context.built), Docker's start event of the agent's container and the
// server's first /v1/chat/completions. A second task on the same
// repository then shows the same with bcode's caches warm.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

func init() {
	register(benchmark{
		name:    "first-request",
		summary: "seconds from bcode task run to the agent's first model request, by phase, on real modules with empty caches",
		run:     runFirstRequestBench,
	})
}

// defaultFirstRequestModules: two committed bundles (offline) and one
// module from the proxy (skipped when the proxy cannot be reached).
const defaultFirstRequestModules = "bundle:spf13+pflag,bundle:Masterminds+semver,proxy:github.com/pelletier/go-toml/v2@v2.3.0"

// errUnreachable marks a module the proxy could not give: the row is
// skipped, not failed (CI runs offline).
var errUnreachable = errors.New("module proxy unreachable")

type firstRequestRow struct {
	module, caches string
	lines          int
	lease, pack    time.Duration // task.started - start; context.built - task.started
	container      time.Duration // the agent container's start - context.built (-1: unknown)
	first          time.Duration // the first chat request - start
	end            time.Duration // the run's exit - start
	status         string
}

func runFirstRequestBench(ctx context.Context, _ *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode bench perf first-request", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modules := fs.String("modules", defaultFirstRequestModules, "comma-separated: bundle:NAME (engine/bench/perf/testdata/packcorpus/NAME.bundle) or proxy:MODULE@VERSION")
	corpus := fs.String("corpus", "engine/bench/perf/testdata/packcorpus", "directory of the bundles")
	image := fs.String("image", "bcode-sandbox:bench", "sandbox image to build (not timed) and use")
	full := fs.Bool("full", false, "let the agent add a test so the run goes on through the gate (which waits for the warm-up); the END column is then the gate's too")
	keep := fs.Bool("keep", false, "keep the scratch directory (repositories, state, logs)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	e, err := docker.Connect(cctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf first-request: %v\n", err)
		return 2
	}
	defer e.Close()
	if _, err := e.BuildImage(ctx, *image); err != nil {
		fmt.Fprintf(stderr, "bcode bench perf first-request: building %s: %v\n", *image, err)
		return 2
	}
	scratch, err := os.MkdirTemp("", "bcode-bench-first-request-")
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf first-request: %v\n", err)
		return 2
	}
	if *keep {
		fmt.Fprintf(stderr, "bcode bench perf first-request: keeping %s\n", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	bin := filepath.Join(scratch, "bin")
	for _, b := range []struct{ pkg, cgo string }{
		{"github.com/bcode-dev/bcode/cmd/bcode", ""},
		{"github.com/bcode-dev/bcode/cmd/bcode-agent", "CGO_ENABLED=0"},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), b.pkg)
		cmd.Env = append(os.Environ(), b.cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "bcode bench perf first-request: building %s: %v\n%s", b.pkg, err, out)
			return 2
		}
	}
	goEnv, err := userGoEnv(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "bcode bench perf first-request: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "## First model request after `bcode task run` (load at start: %s)\n\n", loadAverage())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODULE\tGO LINES\tBCODE CACHES\tLEASE\tPACK\tAGENT CONTAINER\tFIRST REQUEST\tEND\tSTATUS")
	code := 0
	for i, spec := range splitList(*modules) {
		dir := filepath.Join(scratch, fmt.Sprintf("m%d", i))
		repo := filepath.Join(dir, "repo")
		name, err := materializeModule(ctx, spec, *corpus, repo)
		if errors.Is(err, errUnreachable) {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\tskipped: %v\t\t\n", spec, err)
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "bcode bench perf first-request: %s: %v\n", spec, err)
			return 2
		}
		lines, _ := goLines(repo)
		for _, caches := range []string{"empty", "warm"} {
			row, err := firstRequestRun(ctx, firstRequestSetup{
				bin: bin, dir: dir, repo: repo, image: *image, full: *full, goEnv: goEnv, fresh: caches == "empty",
			})
			if err != nil {
				fmt.Fprintf(stderr, "bcode bench perf first-request: %s (%s caches): %v\n", name, caches, err)
				code = 1
				continue
			}
			row.module, row.lines, row.caches = name, lines, caches
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.module, row.lines, row.caches,
				secs(row.lease), secs(row.pack), secs(row.container), secs(row.first), secs(row.end), row.status)
		}
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\nload at the end: %s\n", loadAverage())
	fmt.Fprintln(stdout, "LEASE: `task run` start to task.started; PACK: to context.built (worktree and context pack);")
	fmt.Fprintln(stdout, "AGENT CONTAINER: context.built to the agent container's start; FIRST REQUEST: `task run` start to the")
	fmt.Fprintln(stdout, "model server's first /v1/chat/completions; END: `task run` exit.")
	return code
}

func secs(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// loadAverage is /proc/loadavg's first three fields ("?" elsewhere).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// userGoEnv pins the user's Go caches for the CLI, whose HOME moves.
func userGoEnv(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	var env []string
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// materializeModule makes repo a git repository of spec and returns the
// module's name.
func materializeModule(ctx context.Context, spec, corpus, repo string) (string, error) {
	kind, what, _ := strings.Cut(spec, ":")
	switch kind {
	case "bundle":
		b := filepath.Join(corpus, what+".bundle")
		if out, err := exec.CommandContext(ctx, "git", "clone", "-q", b, repo).CombinedOutput(); err != nil {
			return "", fmt.Errorf("git clone %s: %v: %s", b, err, out)
		}
		return strings.Replace(what, "+", "/", 1), nil
	case "proxy":
		mod, version, ok := strings.Cut(what, "@")
		if !ok {
			return "", fmt.Errorf("%q: want proxy:MODULE@VERSION", spec)
		}
		out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", what).Output()
		var info struct{ Dir, Error string }
		json.Unmarshal(out, &info)
		if err != nil || info.Dir == "" {
			return "", fmt.Errorf("%w: go mod download %s: %v %s", errUnreachable, what, err, info.Error)
		}
		if err := copyTree(info.Dir, repo); err != nil {
			return "", err
		}
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", what}} {
			if out, err := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
				return "", fmt.Errorf("git %s: %v: %s", args[0], err, out)
			}
		}
		return mod + "@" + version, nil
	}
	return "", fmt.Errorf("%q: want bundle:NAME or proxy:MODULE@VERSION", spec)
}

// copyTree copies the regular files of a module cache directory (read-only
// there) into dst, writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

type firstRequestSetup struct {
	bin, dir, repo, image string
	goEnv                 []string
	full                  bool
	fresh                 bool // new HOME, caches and state
}

// firstRequestRun runs one task and returns its phases.
func firstRequestRun(ctx context.Context, s firstRequestSetup) (firstRequestRow, error) {
	row := firstRequestRow{container: -1}
	script := []modeltest.Step{benchCall("finish", map[string]any{"summary": "first request measured"})}
	if s.full {
		pkg, err := rootPackage(s.repo)
		if err != nil {
			return row, err
		}
		script = []modeltest.Step{
			benchCall("file_editor", map[string]any{"command": "create", "path": "bcode_bench_first_request_test.go",
				"file_text": "package " + pkg + "\n\nimport \"testing\"\n\nfunc TestBcodeBenchFirstRequest(t *testing.T) {}\n"}),
			benchCall("finish", map[string]any{"summary": "added a test"}),
		}
	}
	model := modeltest.New(modeltest.Options{Tools: true}, script...)
	defer model.Close()
	if err := writeBenchConfig(ctx, s.repo, model.URL, s.image); err != nil {
		return row, err
	}
	home := filepath.Join(s.dir, "home")
	if s.fresh {
		os.RemoveAll(home)
	}
	env := benchEnv(s.goEnv, home)
	bcode := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "bcode"), args...)
		cmd.Dir, cmd.Env = s.repo, env
		return cmd
	}
	out, err := bcode("task", "create", "Make the parser's error messages name the offending input.").Output()
	if err != nil {
		return row, fmt.Errorf("bcode task create: %v: %s", err, exitText(err))
	}
	id := strings.TrimSpace(string(out))

	start := time.Now()
	starts, stopEvents := containerStarts(ctx, id, start)
	defer stopEvents()
	firstChat := make(chan time.Time, 1)
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	go func() {
		for pollCtx.Err() == nil {
			for _, r := range model.Requests() {
				if strings.HasSuffix(r.Path, "/chat/completions") {
					firstChat <- time.Now()
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	run := bcode("task", "run", id)
	var runOut strings.Builder
	run.Stdout, run.Stderr = &runOut, &runOut
	runErr := run.Run()
	row.end = time.Since(start)
	stopPoll()
	select {
	case t := <-firstChat:
		row.first = t.Sub(start)
	default:
		return row, fmt.Errorf("no chat request reached the model server (run: %v)\n%s", runErr, runOut.String())
	}
	evs, err := taskEvents(bcode, id)
	if err != nil {
		return row, err
	}
	row.lease = evs["task.started"].Sub(start)
	row.pack = evs["context.built"].Sub(evs["task.started"])
	if t, ok := starts(); ok {
		row.container = t.Sub(evs["context.built"])
	}
	row.status = "exit 0"
	if runErr != nil {
		row.status = "exit " + exitText(runErr)
	}
	if st, err := bcode("task", "status", id, "--json").Output(); err == nil {
		var v struct {
			Status  string `json:"status"`
			Verdict string `json:"verdict"`
			Task    *struct {
				Status  string `json:"status"`
				Verdict string `json:"verdict"`
			} `json:"task"`
		}
		if json.Unmarshal(st, &v) == nil {
			if v.Task != nil {
				v.Status, v.Verdict = v.Task.Status, v.Task.Verdict
			}
			row.status += ", " + v.Status
			if v.Verdict != "" {
				row.status += " (" + v.Verdict + ")"
			}
		}
	}
	return row, nil
}

func benchCall(name string, args map[string]any) modeltest.Step {
	b, _ := json.Marshal(args)
	return modeltest.Step{ToolCalls: []modeltest.Call{{Name: name, Arguments: string(b)}}}
}

// writeBenchConfig commits the repository's .bcode/config.toml for this
// run's model server (the base commit's config is the one a task reads).
func writeBenchConfig(ctx context.Context, repo, endpoint, image string) error {
	cfg := fmt.Sprintf("[model]\nendpoint = %q\n\n[gate]\nflake_runs = 1\n\n[task]\nmax_attempts = 1\nmax_turns = 4\nwall_clock = \"30m\"\n\n[sandbox]\nimage = %q\n", endpoint, image)
	if err := os.MkdirAll(filepath.Join(repo, ".bcode"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, ".bcode", "config.toml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"add", ".bcode/config.toml"}, {"-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "bench: model server " + endpoint}} {
		if out, err := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", args[0], err, out)
		}
	}
	return nil
}

// benchEnv is the CLI's environment: the user's, without bcode's settings,
// with HOME and the XDG directories (bcode's caches, config and state)
// under home, and the user's Go caches pinned.
func benchEnv(goEnv []string, home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "BCODE_") || strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "GOCACHE" || k == "GOMODCACHE" || k == "GOPATH" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, goEnv...)
	return append(env, "HOME="+home,
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"),
		"BCODE_STATE="+filepath.Join(home, "state", "bcode"))
}

// rootPackage is the package name of the repository root's Go files.
func rootPackage(repo string) (string, error) {
	ms, _ := filepath.Glob(filepath.Join(repo, "*.go"))
	for _, m := range ms {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := os.Open(m)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "package "); ok {
				f.Close()
				return strings.Fields(name)[0], nil
			}
		}
		f.Close()
	}
	return "", fmt.Errorf("%s: no Go package at the root", repo)
}

// taskEvents is the time of each event kind's first occurrence
// (`bcode task events --json` prints one event per line).
func taskEvents(bcode func(...string) *exec.Cmd, id string) (map[string]time.Time, error) {
	out, err := bcode("task", "events", id, "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("bcode task events: %v: %s", err, exitText(err))
	}
	at := map[string]time.Time{}
	dec := json.NewDecoder(strings.NewReader(string(out))) // one event per line
	for {
		var e struct {
			Kind string    `json:"kind"`
			At   time.Time `json:"at"`
		}
		if dec.Decode(&e) != nil {
			break
		}
		if _, seen := at[e.Kind]; !seen {
			at[e.Kind] = e.At
		}
	}
	for _, k := range []string{"task.started", "context.built"} {
		if _, ok := at[k]; !ok {
			return nil, fmt.Errorf("task %s has no %s event:\n%s", id, k, out)
		}
	}
	return at, nil
}

// containerStarts follows Docker's start events of the task's containers
// (the docker CLI's `docker events`); the first is the agent's. It returns
// a function giving the first start and one that stops following.
func containerStarts(ctx context.Context, id string, since time.Time) (func() (time.Time, bool), func()) {
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, "docker", "events", "--since", strconv.FormatInt(since.Unix()-1, 10),
		"--filter", "type=container", "--filter", "event=start", "--filter", "label="+docker.LabelTask+"="+id,
		"--format", "{{.TimeNano}}")
	stdout, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		cancel()
		return func() (time.Time, bool) { return time.Time{}, false }, func() {}
	}
	var mu sync.Mutex
	var first time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			n, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
			if err != nil {
				continue
			}
			mu.Lock()
			if first.IsZero() {
				first = time.Unix(0, n)
			}
			mu.Unlock()
		}
	}()
	get := func() (time.Time, bool) {
		// Docker delivers the event a moment after the start.
		for range 20 {
			mu.Lock()
			t := first
			mu.Unlock()
			if !t.IsZero() {
				return t, true
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Time{}, false
	}
	stop := func() {
		cancel()
		cmd.Wait()
		<-done
	}
	return get, stop
}

// exitText is an exec error's exit status and stderr.
func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Sprintf("%d: %s", ee.ExitCode(), strings.TrimSpace(string(ee.Stderr)))
	}
	return err.Error()
}
