package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
)

// The key of an untouched base's suite results (BaseResults) is made here
// and nowhere else: a hash of everything that decides what the base's whole
// suite run gives. When any part cannot be determined there is no key, and
// the base runs as it always did.
//
//	gate     this executable's own bytes: another bcode may read results
//	         differently
//	tree     the base's tree (every path, mode and object id), not its
//	         commit: the same tree gives the same results
//	sandbox  the runner's name and type, and its Identity (an image) for a
//	         runner other than the host's; a container without one is not
//	         keyed
//	env      the environment a command gets in the sandbox (`env` run
//	         there), less the variables that name this process's scratch
//	toolchain each adapter's Toolchain, in the base snapshot; a language
//	         with no file in the tree runs nothing and is "absent"
//	config   the base config as the gate uses it (flake_runs, timeouts,
//	         python startup_files, every other setting)

// baseKeyVersion changes when what the key covers or the stored form does.
const baseKeyVersion = "bcode-base-results-1"

// Toolchain is implemented by an adapter that can name the toolchain its
// runs in dir would use through r (a version, an interpreter with its
// packages), for the key of the base's results. An adapter without it, or
// one that returns an error, leaves the base unkeyed.
type Toolchain interface {
	Toolchain(ctx context.Context, r sandbox.Runner, dir string) (string, error)
}

// RunnerIdentity is implemented by a runner other than the host's that can
// name what its commands see (docker.Runner: the image's id, the user, the
// limits and the mounts but the worktree's).
type RunnerIdentity interface {
	Identity(ctx context.Context) (string, error)
}

// ErrUnkeyed: a part of the base's key could not be determined, so its
// results are neither reused nor stored.
var ErrUnkeyed = errors.New("base results: cannot key the base")

// scratchVars name this process's scratch directory or the container's
// host name: they differ between two runs that see the same environment.
var scratchVars = map[string]bool{
	"TMPDIR": true, "GOTMPDIR": true, "HOSTNAME": true, "PWD": true, "OLDPWD": true, "SHLVL": true, "_": true,
	"BCODE_SCRATCH_OWNER": true, // sandbox/scratch.OwnerEnv
}

// baseKey is the key of the base's whole-suite results in baseDir.
func (g *Gate) baseKey(ctx context.Context, change *Change, baseDir string, cfg config.Config) (string, error) {
	h := sha256.New()
	part := func(name, value string) { fmt.Fprintf(h, "%s %d\n%s\n", name, len(value), value) }
	part("version", baseKeyVersion)
	self, err := executableHash()
	if err != nil {
		return "", err
	}
	part("gate", self)
	tree, owned, err := g.baseTree(ctx, change)
	if err != nil {
		return "", err
	}
	part("tree", tree)
	sb, err := runnerIdentity(ctx, g.Runner)
	if err != nil {
		return "", err
	}
	part("sandbox", sb)
	env, err := sandboxEnv(ctx, g.Runner, baseDir)
	if err != nil {
		return "", err
	}
	part("env", env)
	for _, a := range g.Adapters {
		id, err := adapterToolchain(ctx, g.Runner, a, baseDir, owned[a.Language()])
		if err != nil {
			return "", err
		}
		part("toolchain "+a.Language(), id)
	}
	// Protected paths judge the change, never run a test; a task's pinned
	// oracle adds its own, and the base's results are every task's.
	cfg.Gate.Protected = nil
	settings, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("%w: config: %v", ErrUnkeyed, err)
	}
	part("config", string(settings))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// baseTree is the identity of the base's tree (its entries' paths, modes
// and object ids, in order) and which adapters own a file of it.
func (g *Gate) baseTree(ctx context.Context, change *Change) (string, map[string]bool, error) {
	ts, ok := change.Workspace.(TreeSource)
	if !ok {
		return "", nil, fmt.Errorf("%w: the workspace cannot list the base's tree", ErrUnkeyed)
	}
	entries, err := ts.Tree(BaseSide).Entries(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("%w: listing the base's tree: %v", ErrUnkeyed, err)
	}
	slices.SortFunc(entries, func(a, b TreeEntry) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	owned := map[string]bool{}
	for _, e := range entries {
		fmt.Fprintf(h, "%s %s %q\n", e.Mode, e.OID, e.Path)
		for _, a := range g.Adapters {
			if !owned[a.Language()] && a.Owns(e.Path) {
				owned[a.Language()] = true
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), owned, nil
}

// runnerIdentity names the sandbox: the host's by its name and type (a
// confined runner is another sandbox than a plain one), any other only
// with its Identity.
func runnerIdentity(ctx context.Context, r sandbox.Runner) (string, error) {
	id := fmt.Sprintf("%s %T", r.Name(), r)
	if ri, ok := r.(RunnerIdentity); ok {
		more, err := ri.Identity(ctx)
		if err != nil {
			return "", fmt.Errorf("%w: the sandbox's identity: %v", ErrUnkeyed, err)
		}
		return id + " " + more, nil
	}
	if r.Name() != "host" {
		return "", fmt.Errorf("%w: the %s sandbox does not name its image", ErrUnkeyed, r.Name())
	}
	return id, nil
}

// sandboxEnv is the environment commands get in the sandbox, sorted, less
// scratchVars.
func sandboxEnv(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	res, err := r.Run(ctx, sandbox.Command{Dir: dir, Args: []string{"env"}, Timeout: sandbox.ReadLoad().Deadline(probeTimeout, 0)})
	if err != nil || res.ExitCode != 0 || res.Truncated {
		return "", fmt.Errorf("%w: reading the sandbox's environment: %v (exit %d)", ErrUnkeyed, err, res.ExitCode)
	}
	var vars []string
	for _, kv := range strings.Split(string(res.Stdout), "\n") {
		name, _, _ := strings.Cut(kv, "=")
		if kv != "" && !scratchVars[name] {
			vars = append(vars, kv)
		}
	}
	slices.Sort(vars)
	return strings.Join(vars, "\x00"), nil
}

// adapterToolchain is a's toolchain in dir, "absent" when the tree has no
// file of a's language.
func adapterToolchain(ctx context.Context, r sandbox.Runner, a Adapter, dir string, owned bool) (string, error) {
	if !owned {
		return "absent", nil
	}
	tc, ok := a.(Toolchain)
	if !ok {
		return "", fmt.Errorf("%w: the %s adapter does not name its toolchain", ErrUnkeyed, a.Language())
	}
	id, err := tc.Toolchain(ctx, r, dir)
	if err != nil {
		return "", fmt.Errorf("%w: %s toolchain: %v", ErrUnkeyed, a.Language(), err)
	}
	return id, nil
}

// probeTimeout bounds each command a key's toolchain probe runs.
const probeTimeout = 30 * time.Second

var (
	selfOnce sync.Once
	selfHash string
	selfErr  error
)

// executableHash is the hash of this process's executable, read once.
func executableHash() (string, error) {
	selfOnce.Do(func() {
		p, err := os.Executable()
		if err != nil {
			selfErr = err
			return
		}
		f, err := sandbox.OpenPath(p)
		if err != nil {
			selfErr = err
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			selfErr = err
			return
		}
		selfHash = hex.EncodeToString(h.Sum(nil))
	})
	if selfErr != nil {
		return "", fmt.Errorf("%w: reading this executable: %v", ErrUnkeyed, selfErr)
	}
	return selfHash, nil
}

// ProbeToolchain runs args in dir through r with env and returns its
// output, trimmed, for an adapter's Toolchain: a missing executable is an
// identity too ("not found"), so a later install changes the key.
func ProbeToolchain(ctx context.Context, r sandbox.Runner, dir string, env []string, args ...string) (string, error) {
	res, err := r.Run(ctx, sandbox.Command{Dir: dir, Args: args, Env: env, Timeout: sandbox.ReadLoad().Deadline(probeTimeout, 0)})
	if errors.Is(err, sandbox.ErrNotFound) {
		return args[0] + ": not found", nil
	}
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 || res.TimedOut || res.Truncated {
		return "", fmt.Errorf("%s exited %d: %s", strings.Join(args, " "), res.ExitCode, firstLine(string(res.Stderr)))
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}
