package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// Labels naming a container's sandbox.Owner. Every container a Sandbox
// opens for a task carries them, so a later holder of the task finds what
// a killed runner left (ReapStale).
const (
	LabelTask    = "dev.bcode.task"
	LabelFence   = "dev.bcode.fence"
	LabelAttempt = "dev.bcode.attempt"
	// LabelOwner is the bcode process that created the container, as a
	// scratch.Owner ("pid-start time-boot id"), on the host LabelHost
	// names. Every container carries them, task or not, so ReapOrphans
	// finds what a killed process left even when no task names it (the
	// Go cache warm-up, `bcode check --sandbox docker`).
	LabelOwner = "dev.bcode.owner"
	LabelHost  = "dev.bcode.host"
)

// hostName is this machine's name for LabelHost ("" when unknown: such
// containers are judged only by a bcode on a machine that cannot name
// itself either).
func hostName() string {
	h, _ := os.Hostname()
	return h
}

// ReapOrphans force-removes every sandbox container that a bcode process
// on this host created and that has died since (its pid gone or reused,
// or a boot ago): a SIGKILLed runner's agent and gate commands, a killed
// warm-up. Containers of live processes, of other hosts sharing the
// engine, and without an owner label are left alone, and so are those of
// exceptTask (non-empty): its next holder removes them itself, and records
// it (ReapStale). It returns how many it removed.
func (e *Engine) ReapOrphans(ctx context.Context, exceptTask string) (int, error) {
	f := filters.NewArgs(filters.Arg("label", labelSandbox), filters.Arg("label", LabelHost+"="+hostName()))
	list, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return 0, e.wrap(ctx, err)
	}
	n := 0
	for _, c := range list {
		o, ok := scratch.ParseOwner(c.Labels[LabelOwner])
		if !ok || o.Alive() || (exceptTask != "" && c.Labels[LabelTask] == exceptTask) {
			continue
		}
		err := e.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return n, e.wrap(ctx, err)
		}
		n++
	}
	return n, nil
}

// OwnerLabels are the container labels of o (none for work outside a task).
func OwnerLabels(o sandbox.Owner) map[string]string {
	if o.Task == "" {
		return nil
	}
	return map[string]string{
		LabelTask:    o.Task,
		LabelFence:   strconv.FormatInt(o.Fence, 10),
		LabelAttempt: strconv.Itoa(o.Attempt),
	}
}

// Sandbox is the Docker sandbox.Sandbox: each Open connects to the engine
// and returns a Runner whose worktree is the opened directory, with
// everything else (image, toolchains, limits, build cache) from Template.
type Sandbox struct {
	Template Config
}

var _ sandbox.Sandbox = Sandbox{}

// Name implements sandbox.Sandbox.
func (Sandbox) Name() string { return "docker" }

var _ sandbox.Exposer = Sandbox{}

// ExposedRoot is where exposed host directories appear in the container:
// below a path every user may traverse (a host path under /root would
// not be, in a container whose user is not root).
const ExposedRoot = "/opt/bcode/exposed"

// Expose implements sandbox.Exposer: every runner it opens mounts dirs
// read-only (Config.Exposed), each at ExposedRoot/<hash of its host
// path>.
func (s Sandbox) Expose(dirs ...string) (sandbox.Sandbox, []string) {
	s.Template.Exposed = append([]Mount(nil), s.Template.Exposed...)
	at := make([]string, len(dirs))
	for i, d := range dirs {
		sum := sha256.Sum256([]byte(d))
		at[i] = ExposedRoot + "/" + hex.EncodeToString(sum[:8]) + "/" + filepath.Base(d)
		s.Template.Exposed = append(s.Template.Exposed, Mount{Source: d, Target: at[i]})
	}
	return s, at
}

// Open implements sandbox.Sandbox. The Runner it returns owns its engine
// connection: Close waits for its containers' removal, then closes it.
func (s Sandbox) Open(ctx context.Context, dir string, owner sandbox.Owner) (sandbox.ScopedRunner, error) {
	cfg := s.Template
	cfg.Worktree = dir
	labels := maps.Clone(cfg.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, OwnerLabels(owner))
	cfg.Labels = labels
	r, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ReapStale force-removes the containers of task that runners holding an
// older fence than fence started: a killed runner's agent and the gate
// commands it was running (their deferred removal died with it). The
// current holder's containers are left alone. It returns how many it
// removed.
func (e *Engine) ReapStale(ctx context.Context, task string, fence int64) (int, error) {
	if task == "" {
		return 0, fmt.Errorf("docker: ReapStale needs a task id")
	}
	f := filters.NewArgs(filters.Arg("label", labelSandbox), filters.Arg("label", LabelTask+"="+task))
	list, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return 0, e.wrap(ctx, err)
	}
	n := 0
	for _, c := range list {
		// A container without a readable fence predates fencing or was
		// tampered with; either way no live holder owns it.
		if got, err := strconv.ParseInt(c.Labels[LabelFence], 10, 64); err == nil && got >= fence {
			continue
		}
		err := e.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return n, e.wrap(ctx, err)
		}
		n++
	}
	return n, nil
}
