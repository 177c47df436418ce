// Package agentbackend is the product's agent for `bcode task run`: for
// each attempt it starts bcode-agent inside a Docker sandbox container over
// the attempt's worktree and connects its stdio to the model gateway on the
// host (gateway.FromConfig of the base commit's [model]).
//
// It is wiring only. The container is sandbox/docker's (no network, no
// capabilities, masks over secrets and the git directory, a scrubbed
// environment); the conversation, redaction and budgets are
// engine/gateway's; the turn stepping is runneragent's. What this package
// adds is what ties them to one task: the bcode-agent binary mounted
// read-only, Go modules prefetched on the host and a build cache seeded
// from the base commit, a canary planted in the container's environment,
// container labels naming the task and the runner's fence, and removal of
// the containers an earlier, dead holder of the task left behind.
package agentbackend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway"
	"github.com/bcode-dev/bcode/engine/gateway/runneragent"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// AgentPath is where the bcode-agent binary appears inside the container
// (mounted read-only).
const AgentPath = "/opt/bcode/bin/bcode-agent"

// CanaryEnv is the variable that carries the attempt's canary secret into
// the container. Nothing legitimate reads it: if its value ever reaches the
// model or the ledger, redaction failed.
const CanaryEnv = "BCODE_CANARY_TOKEN"

// Options are the host-side choices the backend makes; DefaultOptions
// finds them.
type Options struct {
	// AgentBinary is the host path of a bcode-agent built for Linux.
	AgentBinary string
	// GoCacheProg is the host command that serves the seeded build cache
	// inside the container (`bcode sandbox gocache`); nil: no seed, the
	// container compiles with a cold cache.
	GoCacheProg []string
	// GoCacheSeed is the seed build cache directory; "" with GoCacheProg
	// set: SeedDir of the task's repository.
	GoCacheSeed string
	// Environ is the host environment whose secret-looking values are
	// redacted from everything sent to the model (nil: os.Environ()).
	Environ []string
	// Getenv reads the frontier key named by the config (nil: os.Getenv).
	Getenv func(string) string
}

// DefaultOptions finds bcode-agent (FindAgent) and, when this process is
// the bcode CLI, uses it as the build cache server.
func DefaultOptions() (Options, error) {
	bin, err := FindAgent()
	if err != nil {
		return Options{}, err
	}
	o := Options{AgentBinary: bin, GoCacheSeed: os.Getenv(SeedEnv)}
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "bcode" {
		o.GoCacheProg = []string{exe, "sandbox", "gocache"}
	}
	return o, nil
}

// Register makes this the agent backend of `bcode task run`.
func Register() { runner.RegisterAgentBackend(Backend) }

// Backend is the runner.AgentBackend: it checks that Docker answers and the
// sandbox image exists (so a task that cannot run fails before taking its
// lease) and finds bcode-agent.
func Backend(ctx context.Context, cfg config.Config, t engine.Task) (runner.Agent, error) {
	o, err := DefaultOptions()
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg, o)
}

// New checks the environment the agent needs and returns it.
func New(ctx context.Context, cfg config.Config, o Options) (*Agent, error) {
	if o.AgentBinary == "" {
		return nil, errors.New("agentbackend: no bcode-agent binary given")
	}
	if err := checkAgentBinary(o.AgentBinary); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := docker.Connect(cctx)
	if err != nil {
		return nil, fmt.Errorf("the agent runs in a Docker sandbox: %w", err)
	}
	defer e.Close()
	if _, err := e.Image(cctx, cfg.Sandbox.Image); err != nil {
		return nil, fmt.Errorf("the agent runs in a Docker sandbox: %w", err)
	}
	return &Agent{cfg: cfg, opts: o}, nil
}

// Agent implements runner.Agent with bcode-agent in a Docker container.
type Agent struct {
	cfg  config.Config
	opts Options
}

var _ runner.Agent = (*Agent)(nil)

// Container labels: every container of an attempt carries them (besides
// sandbox/docker's own), so a later holder of the task finds and removes
// what a killed runner left.
const (
	LabelTask    = "dev.bcode.task"
	LabelFence   = "dev.bcode.fence"
	LabelAttempt = "dev.bcode.attempt"
)

// StartAttempt implements runner.Agent. Before the agent starts it removes
// the task's containers of earlier fences, prefetches Go modules and warms
// the seed build cache on the host, then starts bcode-agent in a container
// over the worktree with stdin and stdout attached to the gateway.
func (a *Agent) StartAttempt(ctx context.Context, in runner.AttemptInput) (runner.Session, error) {
	led, err := openLedgerOf(ctx, in)
	if err != nil {
		return nil, err
	}
	closers := []io.Closer{led}
	fail := func(err error) (runner.Session, error) {
		closeAll(closers)
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	e, err := docker.Connect(cctx)
	cancel()
	if err != nil {
		return fail(fmt.Errorf("the agent runs in a Docker sandbox: %w", err))
	}
	closers = append(closers, e)
	if _, err := ReapStale(ctx, e, in.Task.ID, in.Lease.Fence); err != nil {
		return fail(fmt.Errorf("removing the containers an earlier runner of task %s left: %w", in.Task.ID, err))
	}
	// Prefetching and warming are best effort: a go.mod the agent broke
	// or a base that does not build must not stop the attempt that is to
	// fix it. The go command inside then says what is missing
	// (docker.ExplainOffline); the warning goes to the agent's log.
	var warnings []error
	if err := docker.PrefetchGo(ctx, in.Worktree); err != nil {
		warnings = append(warnings, err)
	}
	goenv, err := docker.HostGoEnv(ctx)
	if err != nil {
		goenv = docker.GoEnv{} // a Python-only task needs no Go; go inside then reports itself missing
	}
	dcfg := docker.Config{
		Image:       a.cfg.Sandbox.Image,
		Worktree:    in.Worktree,
		Go:          goenv,
		Toolchains:  append(docker.HostToolchains(goenv), docker.Mount{Source: a.opts.AgentBinary, Target: AgentPath}),
		MemoryBytes: int64(a.cfg.Sandbox.MemoryMB) << 20,
		NanoCPUs:    int64(a.cfg.Sandbox.CPUs) * 1e9,
		PidsLimit:   int64(a.cfg.Sandbox.Pids),
		Labels: map[string]string{
			LabelTask:    in.Task.ID,
			LabelFence:   strconv.FormatInt(in.Lease.Fence, 10),
			LabelAttempt: strconv.Itoa(in.Attempt.Number),
		},
	}
	if len(a.opts.GoCacheProg) > 0 && goenv.GOROOT != "" {
		seed := a.opts.GoCacheSeed
		if seed == "" {
			if seed, err = SeedDir(in.Task.Repo); err != nil {
				return fail(err)
			}
		}
		if err := os.MkdirAll(seed, 0o755); err != nil {
			return fail(fmt.Errorf("agentbackend: the Go build cache seed: %w", err))
		}
		if err := WarmSeed(ctx, in.Task.Repo, in.Task.Base, seed); err != nil {
			warnings = append(warnings, err)
		}
		dcfg.GoCacheSeed, dcfg.GoCacheProg = seed, a.opts.GoCacheProg
	}
	canary, err := newCanary()
	if err != nil {
		return fail(err)
	}
	dcfg.Env = []string{CanaryEnv + "=" + canary}
	sb, err := e.NewRunner(ctx, dcfg)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, sb)
	getenv := a.opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	g, err := gateway.FromConfig(a.cfg.Model, led, getenv)
	if err != nil {
		return fail(err)
	}
	ra := runneragent.New(g, sb, AgentPath)
	ra.Events = led
	ra.Environ = a.opts.Environ
	ra.Canaries = func(string) []string { return []string{canary} }
	logf, logErr := agentLog(in)
	if logErr == nil {
		ra.Stderr = logf
		closers = append(closers, logf)
		for _, w := range warnings {
			fmt.Fprintf(logf, "bcode: %v\n", w)
		}
	}
	sess, err := ra.StartAttempt(ctx, in)
	if err != nil {
		return fail(err)
	}
	return &session{Session: sess, closers: closers}, nil
}

// agentLog is where bcode-agent's own log (its stderr) goes: a file beside
// the worktree, kept for debugging a failed attempt.
func agentLog(in runner.AttemptInput) (*os.File, error) {
	dir := filepath.Join(filepath.Dir(filepath.Dir(in.Worktree)), "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-f%d-a%d.agent.log", in.Task.ID, in.Lease.Fence, in.Attempt.Number)
	return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

func newCanary() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("agentbackend: canary: %w", err)
	}
	return "bcanary_" + hex.EncodeToString(b), nil
}

// session closes the sandbox runner, the engine connection and the ledger
// handle after runneragent's session (which stops and waits for the agent).
type session struct {
	runner.Session
	closers []io.Closer
}

func (s *session) Close() error {
	err := s.Session.Close()
	return errors.Join(err, closeAll(s.closers))
}

func closeAll(cs []io.Closer) error {
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		errs = append(errs, cs[i].Close())
	}
	return errors.Join(errs...)
}

// openLedgerOf opens the ledger the runner that called StartAttempt uses.
// runner.AttemptInput does not carry it, so it is found from the worktree:
// task.Engine puts worktrees at STATE/worktrees/<task>-f<fence> and the
// ledger at STATE/ledger.db (task.New). The layout is checked, not assumed:
// a worktree elsewhere, or a ledger without the task, is an error.
func openLedgerOf(ctx context.Context, in runner.AttemptInput) (*ledger.Ledger, error) {
	want := fmt.Sprintf("%s-f%d", in.Task.ID, in.Lease.Fence)
	if filepath.Base(in.Worktree) != want || filepath.Base(filepath.Dir(in.Worktree)) != "worktrees" {
		return nil, fmt.Errorf("agentbackend: worktree %s is not a task worktree (STATE/worktrees/%s): cannot find the ledger to record the conversation in", in.Worktree, want)
	}
	path := filepath.Join(filepath.Dir(filepath.Dir(in.Worktree)), "ledger.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("agentbackend: the ledger beside the worktree: %w", err)
	}
	led, err := ledger.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	if _, err := led.Task(ctx, in.Task.ID); err != nil {
		led.Close()
		return nil, fmt.Errorf("agentbackend: the ledger at %s does not hold task %s: %w", path, in.Task.ID, err)
	}
	return led, nil
}
