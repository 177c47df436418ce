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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/module"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agent"
	"github.com/bcode-dev/bcode/engine/gateway"
	"github.com/bcode-dev/bcode/engine/gateway/runneragent"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/verify/javascript"
	"github.com/bcode-dev/bcode/verify/secrets"
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
	// Packages installs the base's locked JavaScript packages for the
	// agent's container (packageMounts); nil: javascript.Packages on the
	// host with its default cache, which the gate's checks share.
	Packages *javascript.Packages
}

// DefaultOptions finds bcode-agent (FindAgent) and the build cache
// (CacheOptions).
func DefaultOptions() (Options, error) {
	bin, err := FindAgent()
	if err != nil {
		return Options{}, err
	}
	o := CacheOptions()
	o.AgentBinary = bin
	return o, nil
}

// CacheOptions are the Options of the seeded build cache alone: SeedEnv or
// the repository's seed, served by `bcode sandbox gocache`: this process
// when it is the bcode CLI, else the bcode installed beside it (bcode-ls,
// installed with it by `go install ./cmd/...`); without one, containers
// compile cold.
func CacheOptions() Options {
	o := Options{GoCacheSeed: os.Getenv(SeedEnv)}
	exe, err := os.Executable()
	if err != nil {
		return o
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if filepath.Base(exe) != "bcode" {
		exe = filepath.Join(filepath.Dir(exe), "bcode")
		if fi, err := os.Stat(exe); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return o
		}
	}
	o.GoCacheProg = []string{exe, "sandbox", "gocache"}
	return o
}

// Backend is the agent.Backend the commands pass in (bcode task run,
// bcode-ls): it checks that Docker answers and the
// sandbox image exists (so a task that cannot run fails before taking its
// lease) and finds bcode-agent.
func Backend(ctx context.Context, cfg config.Config, t engine.Task) (agent.Agent, error) {
	o, err := DefaultOptions()
	if err != nil {
		return nil, err
	}
	a, err := New(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	// A starting runner removes what killed bcode processes on this
	// machine left, but for this task's containers, which its Recover
	// removes and records once it holds the lease. Failing to is not this
	// task's problem (the next start tries again).
	_, _ = ReapOrphans(ctx, t.ID)
	return a, nil
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

// ReapOrphans removes the sandbox containers of bcode processes on this
// machine that have died, but for exceptTask's (docker.Engine.ReapOrphans),
// and, when no task is excepted, the worktree disks they left mounted;
// `bcode runner` and every task's agent call it as they start. No Docker
// engine: nothing to remove.
func ReapOrphans(ctx context.Context, exceptTask string) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := docker.Connect(cctx)
	if err != nil {
		return 0, nil
	}
	defer e.Close()
	n, err := e.ReapOrphans(cctx, exceptTask)
	if err == nil && exceptTask == "" {
		// With every dead owner's container gone, their worktree disks
		// (and releases a kill cut short) can go too; then their scratch
		// directories, which this process's start-up sweep had to leave
		// while a disk was mounted in them.
		var released int
		released, err = docker.ReleaseStaleDisks(ctx)
		if released > 0 {
			_, _ = scratch.Sweep()
		}
	}
	return n, err
}

// Agent implements agent.Agent with bcode-agent in a Docker container.
type Agent struct {
	cfg  config.Config
	opts Options

	mu  sync.Mutex
	pre *prefetcher // the running attempt's: what the user approved
}

// approved is what the user approved for the task, as of the running
// attempt's last look.
func (a *Agent) approved() map[module.Version]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pre.approvedNow()
}

var (
	_ agent.Sandboxed = (*Agent)(nil)
	_ agent.Recoverer = (*Agent)(nil)
)

// Container labels: every container of an attempt carries them (besides
// sandbox/docker's own), so a later holder of the task finds and removes
// what a killed runner left. They are sandbox/docker's owner labels.
const (
	LabelTask    = docker.LabelTask
	LabelFence   = docker.LabelFence
	LabelAttempt = docker.LabelAttempt
)

// Recover implements agent.Recoverer: it removes the containers of the
// task that holders of older fences left (a SIGKILLed runner's agent, or
// the gate commands it was running), and releases the worktree disks dead
// runners left mounted, before anything of this holder runs.
func (a *Agent) Recover(ctx context.Context, t engine.Task, lease engine.Lease) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	e, err := docker.Connect(cctx)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("the agent runs in a Docker sandbox: %w", err)
	}
	defer e.Close()
	n, err := e.ReapStale(ctx, t.ID, lease.Fence)
	if err != nil {
		return n, err
	}
	// The rest of what dead processes left (a warm-up of this task's base
	// that carries no task label) goes too; it is not this task's to count.
	_, _ = e.ReapOrphans(ctx, "")
	// With its containers gone, a dead runner's worktree disk can go too:
	// its content is copied back, so the worktree can be moved. Another
	// task's disk that will not go is not this task's failure (its own
	// runner's start tries again).
	_, err = docker.ReleaseStaleDisks(ctx)
	return n, ownDiskErrors(err, t.ID)
}

// ownDiskErrors keeps the failures to release the disks of task id's
// worktrees, named "<id>-f<fence>" (task.Engine.WorktreePath).
func ownDiskErrors(err error, id string) error {
	var errs []error
	for _, e := range unjoin(err) {
		var se *docker.StaleDiskError
		if !errors.As(e, &se) || strings.HasPrefix(filepath.Base(se.Dir), id+"-f") {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// unjoin is the errors errors.Join made err of, or err alone.
func unjoin(err error) []error {
	if _, one := err.(*docker.StaleDiskError); one {
		return []error{err}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// CheckSandbox implements agent.Sandboxed: the gate verifies the
// agent's attempts in the same container sandbox (image, toolchains,
// limits, seeded build cache) the agent worked in, without the agent
// binary and over a scratch directory instead of the worktree.
func (a *Agent) CheckSandbox(t engine.Task) sandbox.Sandbox {
	return NewSandbox(a.cfg, a.opts, t.Repo, t.Base)
}

// NewSandbox is the Docker sandbox for commands of repo's changes against
// base: cfg's [sandbox] image and limits, the host's toolchains, and the
// seed build cache of o (warmed from base) when o can serve one. `bcode
// check --sandbox docker` verifies a change nobody vetted in it.
func NewSandbox(cfg config.Config, o Options, repo, base string) sandbox.Sandbox {
	return &repoSandbox{a: &Agent{cfg: cfg, opts: o}, task: engine.Task{Repo: repo, Base: base}}
}

// repoSandbox computes its container config at Open, when a context is at
// hand for finding Go and warming the seed.
type repoSandbox struct {
	a       *Agent
	task    engine.Task
	exposed []docker.Mount
}

func (c *repoSandbox) Name() string { return "docker" }

var _ sandbox.Exposer = (*repoSandbox)(nil)

// Expose implements sandbox.Exposer as docker.Sandbox does: the runners it
// opens mount dirs read-only below docker.ExposedRoot.
func (c *repoSandbox) Expose(dirs ...string) (sandbox.Sandbox, []string) {
	sb, at := docker.Sandbox{}.Expose(dirs...)
	cp := *c
	cp.exposed = append(append([]docker.Mount(nil), c.exposed...), sb.(docker.Sandbox).Template.Exposed...)
	return &cp, at
}

// Open opens the gate's runner on its scratch directory: on a disk of the
// base's [sandbox] disk_mb whose content is dropped at Close (the gate
// removes the directory anyway), with the task's module view. It waits for
// nothing: the seed's warm-up is awaited by the runner's first command
// (warmedRunner), so a check that runs no command (no change to check)
// does not wait for a warm-up it will not use.
func (c *repoSandbox) Open(ctx context.Context, dir string, owner sandbox.Owner) (sandbox.ScopedRunner, error) {
	tmpl, view, seed, err := c.a.sandboxConfig(ctx, c.task, c.a.approved(), true)
	if err != nil {
		return nil, err
	}
	tmpl.DiskDiscard = true
	tmpl.Exposed = append(tmpl.Exposed, c.exposed...)
	r, err := docker.Sandbox{Template: tmpl}.Open(ctx, dir, owner)
	if err != nil {
		view.Close()
		return nil, err
	}
	var runner sandbox.ScopedRunner = r
	if seed != nil {
		runner = &warmedRunner{ScopedRunner: r, seed: seed}
	}
	return &viewRunner{ScopedRunner: runner, view: view}, nil
}

// viewRunner removes the module view after the runner's containers.
type viewRunner struct {
	sandbox.ScopedRunner
	view *moduleView
}

// Identity is the container's: the view is named there by the module
// versions it holds (docker.Runner.Identity).
func (r *viewRunner) Identity(ctx context.Context) (string, error) {
	return innerIdentity(ctx, r.ScopedRunner)
}

func (r *viewRunner) Close() error {
	err := r.ScopedRunner.Close()
	return errors.Join(err, r.view.Close())
}

// sandboxConfig is the container every command of the task runs in, but
// for its worktree and labels: the base config's image and limits (the
// worktree's disk among them), the host's toolchains, the task's module
// view (the base's go.sum and the approved modules; the caller closes it;
// shared: the process's view of that set, for the gate's checks)
// and, when the bcode CLI can serve it, a build cache seeded from the base
// commit. It warms nothing; the seed it returns (nil: none) is what the
// caller starts (the agent's container: beside its turns) or waits for
// (the gate's commands).
func (a *Agent) sandboxConfig(ctx context.Context, t engine.Task, approved map[module.Version]bool, shared bool) (docker.Config, *moduleView, *seedWarm, error) {
	goenv, err := docker.HostGoEnv(ctx)
	if err != nil {
		goenv = docker.GoEnv{} // a Python-only task needs no Go; go inside then reports itself missing
	}
	dcfg := docker.Config{
		Image:       a.cfg.Sandbox.Image,
		Go:          goenv,
		Toolchains:  docker.HostToolchains(goenv),
		MemoryBytes: int64(a.cfg.Sandbox.MemoryMB) << 20,
		NanoCPUs:    int64(a.cfg.Sandbox.CPUs) * 1e9,
		PidsLimit:   int64(a.cfg.Sandbox.Pids),
		DiskBytes:   int64(a.cfg.Sandbox.DiskMB) << 20,
	}
	var seed *seedWarm
	if len(a.opts.GoCacheProg) > 0 && goenv.GOROOT != "" {
		dir := a.opts.GoCacheSeed
		if dir == "" {
			if dir, err = SeedDir(t.Repo); err != nil {
				return docker.Config{}, nil, nil, err
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return docker.Config{}, nil, nil, fmt.Errorf("agentbackend: the Go build cache seed: %w", err)
		}
		seed = &seedWarm{tmpl: dcfg, repo: t.Repo, base: t.Base, seed: dir}
		dcfg.GoCacheSeed, dcfg.GoCacheProg = dir, a.opts.GoCacheProg
	}
	var view *moduleView
	if goenv.GOROOT != "" {
		sums, err := BaseSums(ctx, t.Repo, t.Base)
		if err != nil {
			return docker.Config{}, nil, nil, err
		}
		newView := newModuleView
		if shared {
			newView = sharedModuleView
		}
		if view, err = newView(ctx, vouched(sums, approved, nil)); err != nil {
			return docker.Config{}, nil, nil, err
		}
		dcfg.ModCache = view.dir
	}
	return dcfg, view, seed, nil
}

// StartAttempt implements agent.Agent. It prefetches the Go modules the
// base vouches for or the user approved (prefetcher; nothing to fetch and
// no network once the module cache has them), starts warming the seed
// build cache for the gate in a container of its own (startWarm: beside
// the agent's turns, never before the first), and starts bcode-agent in a
// container over the worktree with stdin and stdout attached to the
// gateway. The agent's builds read the seed as far as it is warm. (What
// earlier runners left was removed by Recover when this one took the
// lease.)
func (a *Agent) StartAttempt(ctx context.Context, in agent.AttemptInput) (agent.Session, error) {
	led := in.Ledger
	if led == nil {
		return nil, errors.New("agentbackend: the runner gave no ledger to record the conversation in")
	}
	var closers []io.Closer
	fail := func(err error) (agent.Session, error) {
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
	// Prefetching is best effort too: a go.mod the agent broke must not
	// stop the attempt that is to fix it. The go command inside then says
	// what is missing (docker.ExplainOffline); the warning goes to the
	// agent's log.
	var warnings []error
	pre := &prefetcher{
		dir: in.Worktree, repo: in.Task.Repo, base: in.Task.Base,
		task: in.Task.ID, attempt: int64(in.Attempt.Number), lease: &in.Lease, led: led,
	}
	if err := pre.refresh(ctx); err != nil {
		warnings = append(warnings, err)
	}
	a.mu.Lock()
	a.pre = pre
	a.mu.Unlock()
	dcfg, view, seed, err := a.sandboxConfig(ctx, in.Task, pre.approvedNow(), false)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, view)
	pre.view = view
	var seedRun *warmRun
	if seed != nil {
		seedRun = seed.start(ctx)
		closers = append(closers, closerFunc(seedRun.stop))
	}
	warnings = append(warnings, a.agentContainer(ctx, &dcfg, in)...)
	canary, err := newCanary()
	if err != nil {
		return fail(err)
	}
	dcfg.Env = []string{CanaryEnv + "=" + canary}
	// bcode-agent is the container's PID 1: it alone holds the channel to
	// the gateway (see cmd/bcode-agent's isolateChannel).
	dcfg.NoInit = true
	sb, err := e.NewRunner(ctx, dcfg)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, sb)
	if sb.DiskLimit() == 0 {
		warnings = append(warnings, errors.New("the worktree has no disk limit: mounting its filesystem needs root (docs/sandbox.md, \"Boundary: what it can spend\")"))
	}
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
	ra.Secrets = gateway.SecretDir{Dir: SecretsDir(in.Worktree)}
	var logw io.Writer
	logf, logErr := agentLog(in)
	if logErr == nil {
		logw = logf
		ra.Stderr = logf
		closers = append(closers, logf)
		for _, w := range warnings {
			fmt.Fprintf(logf, "bcode: %v\n", w)
		}
		if seedRun != nil {
			// Closed before the log: the warm-up's failure goes in it.
			closers = append(closers, closerFunc(func() {
				seedRun.stop()
				if err := seedRun.failure(); err != nil {
					fmt.Fprintf(logf, "bcode: %v\n", err)
				}
			}))
		}
	}
	sess, err := ra.StartAttempt(ctx, in)
	if err != nil {
		return fail(err)
	}
	return &session{Session: sess, closers: closers, prefetch: pre, log: logw}, nil
}

// SecretsDir is where the task's secrets (every attempt's canary, every
// secret found) are kept across attempts: bcode's state directory, beside
// the worktrees, which no container mounts.
func SecretsDir(worktree string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(worktree)), "secrets")
}

// agentLog is where bcode-agent's own log (its stderr) goes: a file beside
// the worktree, kept for debugging a failed attempt.
func agentLog(in agent.AttemptInput) (*os.File, error) {
	dir := filepath.Join(filepath.Dir(filepath.Dir(in.Worktree)), "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-f%d-a%d.agent.log", in.Task.ID, in.Lease.Fence, in.Attempt.Number)
	return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

// newCanary is the attempt's canary: secrets.NewCanary's, whose random
// core the redactor finds on its own and in any cheap encoding.
func newCanary() (string, error) {
	c, err := secrets.NewCanary()
	if err != nil {
		return "", fmt.Errorf("agentbackend: %w", err)
	}
	return c, nil
}

// session closes the sandbox runner, the engine connection and the ledger
// handle after runneragent's session (which stops and waits for the agent).
type session struct {
	agent.Session
	closers  []io.Closer
	prefetch *prefetcher
	log      io.Writer // the agent's log; nil when it could not be opened
}

// Turn runs the agent's turn, then fetches on the host the modules a
// changed go.mod needs, before the runner's check builds it offline. A
// failure is the agent's to see in the go command's own message
// (docker.ExplainOffline), so it only goes to the log.
func (s *session) Turn(ctx context.Context) (agent.TurnResult, error) {
	res, err := s.Session.Turn(ctx)
	if err == nil {
		if perr := s.prefetch.refresh(ctx); perr != nil && s.log != nil {
			fmt.Fprintf(s.log, "bcode: %v\n", perr)
		}
	}
	return res, err
}

func (s *session) Close() error {
	err := s.Session.Close()
	return errors.Join(err, closeAll(s.closers))
}

// closerFunc is a Close that cannot fail.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

func closeAll(cs []io.Closer) error {
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		errs = append(errs, cs[i].Close())
	}
	return errors.Join(errs...)
}
