package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/module"

	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/gotool"
)

// dockerSandbox is the agent's sandbox for `bcode check --sandbox docker`
// (CheckRequest.Docker),
// configured by the base commit's [sandbox] (as every rule of the check
// is). The container has no network, so the module versions the base's
// go.sum lists are fetched on the host first — with the user's proxy
// settings, in an empty directory, validated, and nothing else: the head is
// a change nobody has read, and a module path it names is text it chose.
// What the head needs beyond that is named in a note, not fetched. The
// build cache is warmed from the base inside a container too
// (agentbackend.WarmSeed), never on the host.
func dockerSandbox(ctx context.Context, dir, base, head string, note func(string)) (sandbox.Sandbox, error) {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	if base == "" {
		base, err = repo.DefaultBase(ctx)
	} else {
		base, err = repo.Resolve(ctx, base)
	}
	if err != nil {
		return nil, err
	}
	cfg, err := task.BaseConfig(ctx, repo, base)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := docker.Connect(cctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if _, err := e.Image(cctx, cfg.Sandbox.Image); err != nil {
		return nil, err
	}
	sums, err := agentbackend.BaseSums(ctx, repo.Dir, base)
	if err != nil {
		return nil, err
	}
	if err := agentbackend.FetchBaseKnown(ctx, sums); err != nil {
		return nil, fmt.Errorf("fetching the base's Go modules on the host before the offline sandbox: %w", err)
	}
	if missing := headOnlyModules(ctx, repo, head, sums); len(missing) > 0 {
		note(fmt.Sprintf("not fetching %d module version(s) the base's go.sum does not list (the sandbox is offline; fetch them yourself if you trust them): %s",
			len(missing), strings.Join(missing, " ")))
	}
	return agentbackend.NewSandbox(cfg, agentbackend.CacheOptions(), repo.Dir, base), nil
}

// headOnlyModules lists the module versions the head's go.mod and go.sum
// name that the base's go.sum does not and the module cache lacks. It
// reads the files (the working tree's through a confined read, or the head
// revision's from git) and runs nothing.
func headOnlyModules(ctx context.Context, repo *git.Repo, head string, base map[module.Version]gotool.Sum) []string {
	read := func(name string) []byte {
		var b []byte
		if head == "" {
			b, _ = sandbox.ReadFile(repo.Dir, name, 16<<20)
		} else {
			b, _ = repo.ShowFile(ctx, head, name)
		}
		return b
	}
	wanted, err := gotool.Wanted(read("go.mod"), read("go.sum"))
	if err != nil {
		return nil
	}
	tc, err := gotool.Shared(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, v := range wanted {
		if _, ok := base[v]; !ok && !tc.Cached(v, false) {
			out = append(out, gotool.String(v))
		}
	}
	return out
}
