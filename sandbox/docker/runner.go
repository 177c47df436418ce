package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// Defaults for Config's limits (config's DefaultSandbox* agree on memory,
// CPUs and pids; TestDefaultsAgreeWithConfig holds them equal).
const (
	DefaultMemoryBytes = 4 << 30
	DefaultNanoCPUs    = 2e9
	DefaultPidsLimit   = 512
	DefaultTmpBytes    = 1 << 30
	DefaultHomeBytes   = 1 << 30
	DefaultDiskBytes   = 2 << 30
	// ShmBytes is /dev/shm's size (a tmpfs of the container's private IPC
	// namespace), set here rather than left to the engine's default.
	ShmBytes = 64 << 20
	// tmpfsInodes caps the files of /tmp and the home tmpfs: their size
	// caps bytes, not the inodes a flood of empty files takes.
	tmpfsInodes = 1 << 18
)

// Config describes the container every command of a Runner runs in.
type Config struct {
	// Image is the sandbox image; empty means DefaultImage.
	Image string
	// Worktree is the attempt's worktree, an absolute host path. It is the
	// only writable host directory, mounted at the same path, and the
	// default working directory.
	Worktree string
	// Go describes the host's Go toolchain; zero means ask HostGoEnv.
	Go GoEnv
	// Toolchains are the read-only mounts; nil means HostToolchains(Go).
	Toolchains []Mount
	// Exposed are host directories mounted read-only (sandbox.Exposer):
	// a project's installed packages, say.
	Exposed []Mount
	// Rust is the sysroot of the host's Rust toolchain, mounted read-only
	// beside Toolchains with its bin on PATH; empty means ask
	// HostRustSysroot (none found: no Rust in the container).
	Rust string
	// User is "uid:gid" inside the container. Empty means the host user
	// bcode runs as, unless that is root: then SandboxUID:SandboxGID, and
	// the worktree is opened to that user with GrantWrite.
	User string
	// Limits; zero means the Default… constants.
	MemoryBytes int64
	NanoCPUs    int64
	PidsLimit   int64
	TmpBytes    int64 // tmpfs at /tmp
	HomeBytes   int64 // tmpfs at Home, which holds GOCACHE by default
	// DiskBytes is the size of the filesystem the worktree is put on for
	// the runner's life (see disk): writes beyond it fail with ENOSPC.
	// Zero means DefaultDiskBytes; negative means no limit. Enforced only
	// when bcode runs as root (mounting needs it); DiskLimit says.
	DiskBytes int64
	// DiskDiscard: what commands wrote in the worktree is not needed after
	// Close (a scratch directory the caller removes), so Close drops it
	// instead of copying it back.
	DiskDiscard bool
	// ModCache, when set, is a host directory in the go command's module
	// cache layout (gotool.ModuleView: the task's own modules and no
	// others), mounted read-only as the container's GOMODCACHE. The host's
	// whole module cache is never mounted.
	ModCache string
	// CPUShares is the container's CPU weight against other processes
	// when the CPUs are contended (docker run --cpu-shares; 0: the
	// engine's default, 1024). Work that runs beside an agent's turns,
	// such as warming the gate's build cache, takes a low weight so it
	// uses idle CPU and yields the rest.
	CPUShares int64
	// GoCacheDir, when set, is a host directory mounted read-write as
	// GOCACHE so builds are reused across commands. Leave it empty for
	// verification: a cache that tested code could write is a cache that
	// code could poison for the next run.
	GoCacheDir string
	// GoCacheSeed, when set, is a host build cache (the go command's own
	// format) that commands read through GOCACHEPROG, read-only, with
	// their writes going to the container's private tmpfs (ServeGoCache).
	// Seed it from the base commit inside a container (agentbackend's
	// WarmSeed): a cache of bcode's own,
	// not the user's GOCACHE, whose entries and test logs come from every
	// other project the user built.
	GoCacheSeed string
	// GoCacheProg is the host command that serves ServeGoCache when run
	// with "-lower DIR -upper DIR" appended (`bcode sandbox gocache`). Its
	// executable is mounted read-only; it runs inside the container, as
	// the go command's child. Needed with GoCacheSeed.
	GoCacheProg []string
	// Env is added to the sandbox's own base environment ("KEY=value").
	Env []string
	// Labels are added to every container, so Engine.Reap can find the
	// containers of one attempt.
	Labels map[string]string
	// NoInit runs the command as the container's PID 1, without Docker's
	// init. It is for bcode-agent, whose stdio is its channel to the
	// gateway: an init process would hold a second copy of that channel
	// that the agent's own commands, running as the same user, could open
	// through /proc/1/fd; the agent holds it alone, non-dumpable, and reaps
	// orphans itself. Killing PID 1 still ends every process.
	NoInit bool
}

// Runner runs each command in a fresh container (see docs/sandbox.md for
// why one container per command rather than exec into a long-lived one).
// It implements sandbox.Runner.
type Runner struct {
	rust     string // the Rust sysroot in the container ("" none or on PATH already)
	e        *Engine
	ownE     bool
	cfg      Config
	user     string
	uid      int
	grant    bool // re-open the worktree to uid before each command (see GrantWrite)
	env      []string
	mounts   []mount.Mount
	tmpfs    map[string]string
	scratch  string          // host directory holding the empty file and directory masks point at
	disk     *disk           // the worktree's own filesystem; nil when not limited
	removing sync.WaitGroup  // containers still being removed
	sharesMu sync.Mutex      // guards cfg.CPUShares and live
	live     map[string]bool // containers of commands still running
	closeMu  sync.Once
	closeErr error
}

var _ sandbox.ScopedRunner = (*Runner)(nil)

// New connects to the engine and returns a Runner for cfg; Close releases
// both.
func New(ctx context.Context, cfg Config) (*Runner, error) {
	e, err := Connect(ctx)
	if err != nil {
		return nil, err
	}
	r, err := e.NewRunner(ctx, cfg)
	if err != nil {
		e.Close()
		return nil, err
	}
	r.ownE = true
	return r, nil
}

// NewRunner checks cfg and the image and prepares the mounts.
func (e *Engine) NewRunner(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.Worktree == "" || !filepath.IsAbs(cfg.Worktree) {
		return nil, fmt.Errorf("docker runner: the worktree must be an absolute path, got %q", cfg.Worktree)
	}
	cfg.Worktree = filepath.Clean(cfg.Worktree)
	if fi, err := os.Stat(cfg.Worktree); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("docker runner: worktree %s is not a directory: %v", cfg.Worktree, err)
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if _, err := e.Image(ctx, cfg.Image); err != nil {
		return nil, err
	}
	if cfg.Go == (GoEnv{}) {
		g, err := HostGoEnv(ctx)
		if err != nil {
			// Go is one toolchain among others: a Python-only sandbox runs
			// without it, and a go command inside then reports itself missing.
			g = GoEnv{}
		}
		cfg.Go = g
	}
	if cfg.Toolchains == nil {
		cfg.Toolchains = HostToolchains(cfg.Go)
	}
	if cfg.Rust == "" {
		cfg.Rust = HostRustSysroot(ctx)
	}
	var rust string // the sysroot in the container
	cfg.Toolchains, rust = rustMount(cfg.Toolchains, cfg.Rust)
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.MemoryBytes, DefaultMemoryBytes)
	def(&cfg.NanoCPUs, DefaultNanoCPUs)
	def(&cfg.PidsLimit, DefaultPidsLimit)
	def(&cfg.TmpBytes, DefaultTmpBytes)
	def(&cfg.HomeBytes, DefaultHomeBytes)
	def(&cfg.DiskBytes, DefaultDiskBytes)

	r := &Runner{e: e, cfg: cfg, rust: rust}
	if err := r.prepare(ctx); err != nil {
		if r.disk != nil {
			_ = r.disk.release(context.WithoutCancel(ctx))
		}
		if r.scratch != "" {
			os.RemoveAll(r.scratch)
		}
		return nil, err
	}
	return r, nil
}

// prepare puts the worktree on its own filesystem, chooses the user and
// makes the mounts; NewRunner undoes what it did when it fails.
func (r *Runner) prepare(ctx context.Context) error {
	cfg := r.cfg
	if cfg.DiskBytes > 0 && os.Geteuid() == 0 {
		d, err := mountDisk(ctx, cfg.Worktree, cfg.DiskBytes, cfg.DiskDiscard)
		if err != nil {
			return err
		}
		r.disk = d
	}
	uid, gid, err := r.chooseUser()
	if err != nil {
		return err
	}
	r.user = strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
	r.uid = uid
	r.grant = cfg.User == "" && os.Geteuid() == 0

	gocache := Home + "/.cache/go-build"
	modcache := Home + "/go/pkg/mod"
	if cfg.ModCache != "" {
		modcache = ModCacheTarget
	}
	r.env = mergeEnv(baseEnv(cfg.Go, r.rust, gocache, modcache), cfg.Env)
	r.tmpfs = map[string]string{
		// go test runs the test binaries it builds from $TMPDIR, so /tmp
		// must allow exec; Docker mounts tmpfs noexec unless told.
		"/tmp": fmt.Sprintf("rw,nosuid,nodev,exec,size=%d,nr_inodes=%d,mode=1777", cfg.TmpBytes, tmpfsInodes),
		Home:   fmt.Sprintf("rw,nosuid,nodev,size=%d,nr_inodes=%d,uid=%d,gid=%d,mode=0700", cfg.HomeBytes, tmpfsInodes, uid, gid),
	}
	r.mounts = append(r.mounts, mount.Mount{Type: mount.TypeBind, Source: cfg.Worktree, Target: cfg.Worktree,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	if cfg.ModCache != "" {
		if fi, err := os.Stat(cfg.ModCache); err != nil || !fi.IsDir() {
			return fmt.Errorf("docker runner: the module view %s is not a directory: %v", cfg.ModCache, err)
		}
		r.mounts = append(r.mounts, mount.Mount{Type: mount.TypeBind, Source: cfg.ModCache, Target: ModCacheTarget, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	if cfg.GoCacheDir != "" {
		if err := os.MkdirAll(cfg.GoCacheDir, 0o700); err != nil {
			return fmt.Errorf("docker runner: GOCACHE dir: %w", err)
		}
		if os.Geteuid() == 0 && cfg.User == "" {
			if err := GrantWrite(cfg.GoCacheDir, uid); err != nil {
				return err
			}
		}
		r.mounts = append(r.mounts, mount.Mount{Type: mount.TypeBind, Source: cfg.GoCacheDir, Target: gocache})
	}
	if cfg.GoCacheSeed != "" {
		ms, env, err := goCacheProgMounts(cfg)
		if err != nil {
			return err
		}
		r.mounts = append(r.mounts, ms...)
		r.env = mergeEnv(r.env, env)
	}
	for _, m := range cfg.Toolchains {
		if m.Source == "" || !filepath.IsAbs(m.Source) {
			return fmt.Errorf("docker runner: toolchain mount %q is not an absolute path", m.Source)
		}
		if err := refuseSensitive(m.Source); err != nil {
			return err
		}
		r.mounts = append(r.mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.target(), ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	for _, m := range cfg.Exposed {
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.target()) {
			return fmt.Errorf("docker runner: exposed directory %q (at %q) is not an absolute path", m.Source, m.target())
		}
		if fi, err := os.Stat(m.Source); err != nil || !fi.IsDir() {
			return fmt.Errorf("docker runner: exposed directory %s is not a directory: %v", m.Source, err)
		}
		if err := refuseSensitive(m.Source); err != nil {
			return err
		}
		r.mounts = append(r.mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.target(), ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	masks, err := scratch.MkdirTemp("bcode-sandbox-masks-*")
	if err != nil {
		return fmt.Errorf("docker runner: %w", err)
	}
	r.scratch = masks
	if err := os.WriteFile(filepath.Join(masks, "empty"), nil, 0o444); err != nil {
		return fmt.Errorf("docker runner: %w", err)
	}
	if err := os.Mkdir(filepath.Join(masks, "emptydir"), 0o555); err != nil {
		return fmt.Errorf("docker runner: %w", err)
	}
	// The scratch directory itself is private (0700), which the container
	// never needs to traverse: the engine binds the two entries by path.
	return nil
}

// Where the GOCACHEPROG pieces appear inside the container.
const (
	seedTarget = "/opt/bcode/gocache-seed"
	progDir    = "/opt/bcode/gocacheprog"
	upperDir   = Home + "/.cache/go-prog"
)

// goCacheProgMounts mounts the seed cache and the cache program read-only
// and points GOCACHEPROG at them.
func goCacheProgMounts(cfg Config) ([]mount.Mount, []string, error) {
	if len(cfg.GoCacheProg) == 0 || !filepath.IsAbs(cfg.GoCacheProg[0]) {
		return nil, nil, errors.New("docker runner: GoCacheSeed needs GoCacheProg, the absolute path of a program serving the cache (bcode sandbox gocache)")
	}
	if fi, err := os.Stat(cfg.GoCacheSeed); err != nil || !fi.IsDir() {
		return nil, nil, fmt.Errorf("docker runner: the Go cache seed %s is not a directory: %v", cfg.GoCacheSeed, err)
	}
	for _, a := range cfg.GoCacheProg {
		if strings.ContainsAny(a, " \t'\"") {
			return nil, nil, fmt.Errorf("docker runner: GoCacheProg argument %q has spaces or quotes; GOCACHEPROG splits on spaces", a)
		}
	}
	exe := progDir + "/" + filepath.Base(cfg.GoCacheProg[0])
	ms := []mount.Mount{
		{Type: mount.TypeBind, Source: cfg.GoCacheSeed, Target: seedTarget, ReadOnly: true},
		{Type: mount.TypeBind, Source: cfg.GoCacheProg[0], Target: exe, ReadOnly: true},
	}
	argv := append([]string{exe}, cfg.GoCacheProg[1:]...)
	argv = append(argv, "-lower", seedTarget, "-upper", upperDir)
	return ms, []string{"GOCACHEPROG=" + strings.Join(argv, " ")}, nil
}

// chooseUser picks the container's uid and gid (see Config.User).
func (r *Runner) chooseUser() (int, int, error) {
	if r.cfg.User != "" {
		u, g, ok := strings.Cut(r.cfg.User, ":")
		uid, err1 := strconv.Atoi(u)
		gid, err2 := strconv.Atoi(g)
		if !ok || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
			return 0, 0, fmt.Errorf("docker runner: user %q is not numeric uid:gid", r.cfg.User)
		}
		if uid == 0 {
			return 0, 0, errors.New("docker runner: refusing to run the sandbox as root (uid 0)")
		}
		return uid, gid, nil
	}
	if uid := os.Geteuid(); uid != 0 {
		return uid, os.Getegid(), nil
	}
	if err := GrantWrite(r.cfg.Worktree, SandboxUID); err != nil {
		return 0, 0, err
	}
	return SandboxUID, SandboxGID, nil
}

// refuseSensitive rejects toolchain mounts that would hand the container
// the user's home, ssh keys or the Docker socket, whatever the caller asks.
func refuseSensitive(p string) error {
	p = filepath.Clean(p)
	home, _ := os.UserHomeDir()
	bad := []string{"/", "/etc", "/root", "/home", "/var/run", "/run", "/var/lib/docker", "/proc", "/sys", "/dev"}
	if home != "" {
		bad = append(bad, filepath.Clean(home))
	}
	for _, b := range bad {
		if p == b {
			return fmt.Errorf("docker runner: refusing to mount %s into the sandbox", p)
		}
	}
	for _, s := range []string{"/.ssh", "/docker.sock", "/.docker", "/.gnupg", "/.aws", "/.kube", "/.config"} {
		if strings.Contains(p+"/", s+"/") || strings.HasSuffix(p, s) {
			return fmt.Errorf("docker runner: refusing to mount %s into the sandbox", p)
		}
	}
	return nil
}

// Name implements sandbox.Runner.
func (r *Runner) Name() string { return "docker" }

// Dir is the worktree, the only host directory commands can write.
func (r *Runner) Dir() string { return r.cfg.Worktree }

// DiskLimit is the size of the filesystem the worktree is on for the
// runner's life; 0 when none is enforced (bcode is not root, or
// Config.DiskBytes is negative).
func (r *Runner) DiskLimit() int64 {
	if r.disk == nil {
		return 0
	}
	return r.cfg.DiskBytes
}

// User is the "uid:gid" commands run as.
func (r *Runner) User() string { return r.user }

// Env returns the environment a command would get (for tests and doctor).
func (r *Runner) Env(extra []string) []string { return mergeEnv(r.env, extra) }

// Close waits until the containers of finished commands are removed, then
// removes the runner's scratch files and, for a Runner made by New, closes
// the engine connection.
func (r *Runner) Close() error {
	r.closeMu.Do(func() {
		r.removing.Wait()
		if r.disk != nil {
			r.closeErr = r.disk.release(context.Background())
		}
		if err := os.RemoveAll(r.scratch); r.closeErr == nil {
			r.closeErr = err
		}
		if r.ownE {
			if err := r.e.Close(); r.closeErr == nil {
				r.closeErr = err
			}
		}
	})
	return r.closeErr
}

// SetCPUShares changes the CPU weight (Config.CPUShares; 0: the engine's
// default) of the commands running now and of those to come: work that ran
// beside others at a low weight gets the default once something waits for
// it.
func (r *Runner) SetCPUShares(ctx context.Context, shares int64) error {
	r.sharesMu.Lock()
	r.cfg.CPUShares = shares
	ids := make([]string, 0, len(r.live))
	for id := range r.live {
		ids = append(ids, id)
	}
	r.sharesMu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, r.updateShares(ctx, id, shares))
	}
	return errors.Join(errs...)
}

// updateShares sets a running container's CPU weight.
func (r *Runner) updateShares(ctx context.Context, id string, shares int64) error {
	if shares == 0 {
		shares = 1024 // what the engine gives a container created without a weight
	}
	_, err := r.e.cli.ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{CPUShares: shares}})
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("docker runner: changing the CPU weight: %w", r.e.wrap(ctx, err))
	}
	return nil
}

// track records a command's container as running; one created just
// before SetCPUShares changed the weight gets the new weight now.
func (r *Runner) track(ctx context.Context, id string, created int64) {
	r.sharesMu.Lock()
	if r.live == nil {
		r.live = map[string]bool{}
	}
	r.live[id] = true
	now := r.cfg.CPUShares
	r.sharesMu.Unlock()
	if now != created {
		_ = r.updateShares(ctx, id, now)
	}
}

func (r *Runner) untrack(id string) {
	r.sharesMu.Lock()
	delete(r.live, id)
	r.sharesMu.Unlock()
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// maskMounts hides the git directory and secret-looking files behind empty
// read-only mounts. It is computed per command: the worktree changes.
func (r *Runner) maskMounts() ([]mount.Mount, error) {
	masks, err := scanMasks(r.cfg.Worktree)
	if err != nil {
		return nil, fmt.Errorf("docker runner: scanning the worktree for secrets: %w", err)
	}
	out := make([]mount.Mount, 0, len(masks))
	for _, m := range masks {
		src := filepath.Join(r.scratch, "empty")
		if m.dir {
			src = filepath.Join(r.scratch, "emptydir")
		}
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: src, ReadOnly: true,
			Target: filepath.Join(r.cfg.Worktree, filepath.FromSlash(m.rel))})
	}
	return out, nil
}

// Run implements sandbox.Runner: create, attach, start, wait, remove. The
// container's init is PID 1 of its own pid namespace, so killing the
// container on timeout or cancellation ends every process the command
// started, however it daemonised.
func (r *Runner) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	dir, err := r.commandDir(c)
	if err != nil {
		return sandbox.Result{}, err
	}
	start := time.Now()
	parent := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = sandbox.DefaultOutputLimit
	}
	if r.grant {
		if err := GrantWrite(r.cfg.Worktree, r.uid); err != nil {
			return sandbox.Result{}, err
		}
	}
	cc, hc, shares, err := r.commandSpec(c, dir)
	if err != nil {
		return sandbox.Result{}, err
	}
	run := &containerRun{r: r, c: c, parent: parent, start: start,
		// Cleanup must happen even when ctx is what ended the command.
		bg:     context.WithoutCancel(ctx),
		stdout: sandbox.NewCappedOutput(limit, c.Stdout),
		stderr: sandbox.NewCappedOutput(limit, c.Stderr),
	}
	created, err := r.e.cli.ContainerCreate(ctx, cc, hc, nil, nil, "")
	if err != nil {
		if ended(ctx) { // the timeout or the caller ended it before it started
			return run.ended(-1)
		}
		return sandbox.Result{}, fmt.Errorf("docker runner: creating the container: %w", r.e.wrap(ctx, err))
	}
	run.id = created.ID
	r.track(ctx, run.id, shares)
	defer r.untrack(run.id)
	defer r.removeLater(run.bg, run.id)
	return run.execute(ctx)
}

// commandDir is the directory c runs in: c.Dir, or the worktree. An empty
// command, or one that would run outside the worktree, is refused.
func (r *Runner) commandDir(c sandbox.Command) (string, error) {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return "", errors.New("docker runner: empty command")
	}
	dir := c.Dir
	if dir == "" {
		dir = r.cfg.Worktree
	}
	if !filepath.IsAbs(dir) || !within(filepath.Clean(dir), r.cfg.Worktree) {
		return "", fmt.Errorf("docker runner: %w: %q is not inside %s", sandbox.ErrOutsideScope, c.Dir, r.cfg.Worktree)
	}
	return dir, nil
}

// commandSpec is spec for c, given the runner's CPU weight now (returned
// too: track compares it with a weight set while the container is
// created) and c's CPU time limit.
func (r *Runner) commandSpec(c sandbox.Command, dir string) (*container.Config, *container.HostConfig, int64, error) {
	cc, hc, err := r.spec(c.Args, c.Env, dir, c.Stdin != nil, c.OneStream())
	if err != nil {
		return nil, nil, 0, err
	}
	r.sharesMu.Lock()
	shares := r.cfg.CPUShares
	r.sharesMu.Unlock()
	hc.Resources.CPUShares = shares
	if c.CPULimit > 0 {
		// RLIMIT_CPU: the kernel sends a process of the command SIGXCPU
		// when its own CPU time reaches the limit and SIGKILL a second
		// later (Go programs ignore SIGXCPU).
		n := int64(sandbox.CPULimitSeconds(c.CPULimit))
		hc.Resources.Ulimits = append(hc.Resources.Ulimits, &container.Ulimit{Name: "cpu", Soft: n, Hard: n + 1})
	}
	return cc, hc, shares, nil
}

// removeLater removes the container in the background. Removing takes the
// engine ~200 ms; the result does not wait for it. Close waits for every
// removal, and Engine.Reap finds any a killed process left behind.
func (r *Runner) removeLater(bg context.Context, id string) {
	r.removing.Add(1)
	go func() {
		defer r.removing.Done()
		rctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		_ = r.e.cli.ContainerRemove(rctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
}

// containerRun is one command's run in its created container.
type containerRun struct {
	r      *Runner
	c      sandbox.Command
	id     string          // the container
	parent context.Context // the caller's: did it, or the timeout, end the run?
	bg     context.Context // ctx without its end, for cleanup
	start  time.Time
	stdout *sandbox.CappedOutput
	stderr *sandbox.CappedOutput
}

// ended is the result of a run the timeout or the caller ended.
func (run *containerRun) ended(exit int) (sandbox.Result, error) {
	return run.r.ended(run.parent, run.start, run.stdout, run.stderr, exit)
}

// execute attaches to the container, starts it, feeds it c.Stdin, waits for
// it to exit (killing it when ctx ends) and for its output, and says what
// came of it.
func (run *containerRun) execute(ctx context.Context) (sandbox.Result, error) {
	cli := run.r.e.cli
	// Stdin is always attached: for a command without input it is the
	// supervisor's lifeline (see superviseScript), which this process's
	// death closes.
	hij, err := cli.ContainerAttach(ctx, run.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		if ended(ctx) {
			return run.ended(-1)
		}
		return sandbox.Result{}, fmt.Errorf("docker runner: attaching: %w", run.r.e.wrap(ctx, err))
	}
	defer hij.Close()
	waitCtx, stopWait := context.WithCancel(run.bg)
	defer stopWait()
	waitC, waitErrC := cli.ContainerWait(waitCtx, run.id, container.WaitConditionNextExit)

	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(run.stdout, run.stderr, hij.Reader)
		copied <- err
	}()

	if err := cli.ContainerStart(ctx, run.id, container.StartOptions{}); err != nil {
		if ended(ctx) {
			return run.ended(-1)
		}
		return sandbox.Result{}, run.startError(ctx, err)
	}
	if run.c.Stdin != nil {
		go func() {
			_, _ = io.Copy(hij.Conn, run.c.Stdin)
			_ = hij.CloseWrite()
		}()
	}

	exit, killed, waitErr := run.wait(ctx, waitC, waitErrC)
	// The attach stream ends when the container's stdio closes; bound the
	// wait in case the engine keeps it open.
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
	}
	return run.outcome(ctx, exit, killed, waitErr)
}

// startError is the error of a container that did not start: a command
// that does not exist is sandbox.ErrNotFound.
func (run *containerRun) startError(ctx context.Context, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "executable file not found") || strings.Contains(msg, "no such file or directory") {
		return fmt.Errorf("%s: %w", run.c.Args[0], sandbox.ErrNotFound)
	}
	return fmt.Errorf("docker runner: starting the container: %w", run.r.e.wrap(ctx, err))
}

// wait waits for the container to exit; when ctx ends first (the timeout
// or the caller), it kills the container and reports killed.
func (run *containerRun) wait(ctx context.Context, waitC <-chan container.WaitResponse, waitErrC <-chan error) (exit int64, killed bool, waitErr error) {
	exit = -1
	select {
	case w := <-waitC:
		exit = w.StatusCode
		if w.Error != nil && w.Error.Message != "" {
			waitErr = errors.New(w.Error.Message)
		}
	case waitErr = <-waitErrC:
	case <-ctx.Done():
		exit, waitErr = run.kill(waitC, waitErrC)
		return exit, true, waitErr
	}
	return exit, false, waitErr
}

// kill kills the container and waits, 30 s at most, for its exit status
// (-1 when none came).
func (run *containerRun) kill(waitC <-chan container.WaitResponse, waitErrC <-chan error) (exit int64, err error) {
	exit = -1
	kctx, cancel := context.WithTimeout(run.bg, 30*time.Second)
	defer cancel()
	if kerr := run.r.e.cli.ContainerKill(kctx, run.id, "KILL"); kerr != nil && !cerrdefs.IsNotFound(kerr) && !cerrdefs.IsConflict(kerr) {
		err = fmt.Errorf("docker runner: killing the container: %w", kerr)
	}
	select {
	case w := <-waitC:
		exit = w.StatusCode
	case <-waitErrC:
	case <-kctx.Done():
	}
	return exit, err
}

// outcome is the run's result from how the container exited: a killed
// one is a timeout or the caller's cancellation, a missing command is
// sandbox.ErrNotFound, and one killed by a limit says which.
func (run *containerRun) outcome(ctx context.Context, exit int64, killed bool, waitErr error) (sandbox.Result, error) {
	if killed {
		if waitErr != nil {
			return sandbox.Result{}, waitErr
		}
		return run.ended(int(exit))
	}
	if waitErr != nil {
		return sandbox.Result{}, fmt.Errorf("docker runner: waiting for the container: %w", run.r.e.wrap(ctx, waitErr))
	}
	// Past the deadline is a timeout even when the exit was seen before
	// the context's timer ran (a busy scheduler runs timers late): the
	// clock's answer, as sandbox/host gives it.
	if ended(ctx) {
		return run.ended(int(exit))
	}
	res := run.r.result(run.start, run.stdout, run.stderr, int(exit))
	if exit == 127 && isInitNotFound(res.Stderr) {
		return res, fmt.Errorf("%s: %w", run.c.Args[0], sandbox.ErrNotFound)
	}
	if exit == exitKilled || exit == exitCPULimit {
		run.explainKill(&res)
	}
	return res, nil
}

// explainKill says which limit killed the command: the memory limit (the
// engine says so, and res.Stderr says it to the reader), else the CPU limit.
func (run *containerRun) explainKill(res *sandbox.Result) {
	oom := false
	if in, err := run.r.e.cli.ContainerInspect(run.bg, run.id); err == nil && in.State != nil && in.State.OOMKilled {
		oom = true
		res.Stderr = append(res.Stderr, fmt.Sprintf("\nbcode sandbox: the command was killed for using more than the sandbox's %d MiB of memory\n", run.r.cfg.MemoryBytes>>20)...)
	}
	// Nothing else in the container sends SIGKILL (its supervisor does
	// only when this process is gone, and then nobody reads the result):
	// not the memory limit, so the CPU limit.
	res.CPULimited = run.c.CPULimit > 0 && !oom
}

// spec is the container for one command: every restriction of the
// sandbox in one place.
func (r *Runner) spec(args, env []string, dir string, stdin, merged bool) (*container.Config, *container.HostConfig, error) {
	masks, err := r.maskMounts()
	if err != nil {
		return nil, nil, err
	}
	labels := map[string]string{labelSandbox: "1"}
	for k, v := range r.cfg.Labels {
		labels[k] = v
	}
	// Who made it, set last so no caller's label can disown it: a sweep
	// removes the containers of a bcode process that is gone.
	labels[LabelOwner] = scratch.Self().String()
	labels[LabelHost] = hostName()
	switch {
	case !stdin && merged:
		args = append([]string{"/bin/sh", "-c", superviseScript + mergeStreams, "bcode-supervise"}, args...)
	case !stdin:
		args = append([]string{"/bin/sh", "-c", superviseScript, "bcode-supervise"}, args...)
	case merged:
		args = append([]string{"/bin/sh", "-c", execScript + mergeStreams, "bcode-supervise"}, args...)
	}
	init := !r.cfg.NoInit
	pids := r.cfg.PidsLimit
	cc := &container.Config{
		Image:           r.cfg.Image,
		Cmd:             args,
		Env:             mergeEnv(r.env, env),
		WorkingDir:      filepath.Clean(dir),
		User:            r.user,
		AttachStdout:    true,
		AttachStderr:    true,
		AttachStdin:     true,
		OpenStdin:       true,
		StdinOnce:       true,
		NetworkDisabled: true,
		Labels:          labels,
	}
	hc := &container.HostConfig{
		NetworkMode:    "none",
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true"},
		ReadonlyRootfs: true,
		Init:           &init,
		IpcMode:        container.IPCModePrivate,
		Tmpfs:          r.tmpfs,
		ShmSize:        ShmBytes,
		Mounts:         append(append([]mount.Mount(nil), r.mounts...), masks...),
		// Output reaches us through attach; logging it too would let a
		// runaway command fill the engine's disk.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     r.cfg.MemoryBytes,
			MemorySwap: r.cfg.MemoryBytes, // no swap on top
			NanoCPUs:   r.cfg.NanoCPUs,
			PidsLimit:  &pids,
		},
	}
	return cc, hc, nil
}

// ended reports a command that the timeout or the caller's ctx ended.
func (r *Runner) ended(parent context.Context, start time.Time, stdout, stderr *sandbox.CappedOutput, exit int) (sandbox.Result, error) {
	res := r.result(start, stdout, stderr, exit)
	if parent.Err() == nil { // our own timeout, not the caller's cancellation
		res.TimedOut = true
		return res, nil
	}
	return res, parent.Err()
}

func (r *Runner) result(start time.Time, stdout, stderr *sandbox.CappedOutput, exit int) sandbox.Result {
	return sandbox.Result{
		ExitCode:  exit,
		Stdout:    ExplainOffline(stdout.Bytes()),
		Stderr:    ExplainOffline(stderr.Bytes()),
		Truncated: stdout.Cut() || stderr.Cut(),
		Duration:  time.Since(start),
	}
}

// isInitNotFound recognises the container init (tini, Docker's
// docker-init) failing to exec the command because it does not exist.
func isInitNotFound(stderr []byte) bool {
	s := string(stderr)
	return (strings.Contains(s, "[FATAL tini") || strings.Contains(s, superviseNotFound)) && strings.Contains(s, "No such file or directory")
}

// superviseScript is what a command without input runs under, so that its
// container ends when the bcode process that started it dies, SIGKILL
// included. The container's stdin stays attached to that process and is
// never written: the engine closes it when the attach connection closes,
// which the kernel does when the process dies. The script keeps that
// stdin on fd 3 for a watcher in the background, gives the command
// /dev/null (a command without input reads end of file at once), and
// execs the command in its own place, so the command is the init's child
// with its own signals and exit status. When the watcher reads end of
// file it SIGKILLs the command ($$ is its pid after exec); the init
// (Docker's, PID 1) then exits, and the kernel kills everything else in
// the container's pid namespace. The shell and cat are the host's, from
// the read-only /usr mount every sandbox has.
const superviseScript = `exec 3<&0 </dev/null
{ cat <&3 >/dev/null; kill -KILL $$; } &
exec 3<&-
` + execScript

// execScript runs "$@", saying so as Docker's init would when it does not
// exist. With mergeStreams after it, the command's stderr is its stdout:
// one pipe, so the order of what it wrote to the two is kept.
const execScript = `command -v -- "$1" >/dev/null 2>&1 || { printf '` + superviseNotFound + ` exec %s failed: No such file or directory\n' "$1" >&2; exit 127; }
exec "$@"`

const mergeStreams = " 2>&1"

// superviseNotFound starts the supervisor's message for a command that
// does not exist, which Run turns into sandbox.ErrNotFound as it does
// Docker's init's.
const superviseNotFound = "[FATAL bcode-supervise]"

// ended reports whether ctx is done or past its deadline. A dial bounded by
// the deadline can fail ("i/o timeout") a moment before ctx's own timer
// marks it done; that is still the command's timeout, not an engine error.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// A container's command runs on Linux: its exit status after SIGKILL
// (the memory limit, or the CPU limit's hard one) and after SIGXCPU (the
// CPU limit's soft one), as the shell reports it.
const (
	exitKilled   = 128 + 9
	exitCPULimit = 128 + 24
)
