package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// Reproducer runs a task's --reproduce tests on its base before any model
// call. A Checker that is one (GateChecker) runs them where its checks
// run; a task with an oracle to reproduce and a Checker that is not one
// fails instead of calling the model unchecked.
type Reproducer interface {
	Reproduce(ctx context.Context, in ReproduceInput) (*verify.Reproduction, error)
}

// ReproduceInput names the tests and where to run them.
type ReproduceInput struct {
	Repo, Base, TaskID string
	Fence              int64
	Config             config.Config
	Selectors          []verify.Test
}

// Reproduce implements Reproducer: check.Reproduce in the checker's
// sandbox or runner.
func (g GateChecker) Reproduce(ctx context.Context, in ReproduceInput) (*verify.Reproduction, error) {
	o := check.ReproduceOptions{Repo: in.Repo, Base: in.Base, Runner: g.Runner, Config: in.Config, Selectors: in.Selectors}
	if g.Sandbox != nil {
		o.Runner, o.Sandbox = nil, g.Sandbox
		o.Owner = sandbox.Owner{Task: in.TaskID, Fence: in.Fence}
	}
	return check.Reproduce(ctx, o)
}

// reproduce runs the task's oracle request, once: it pins the oracle, or
// ends the task not_reproducible (done). A pinned oracle is read for the
// checks.
func (s *run) reproduce(ctx context.Context, cfg config.Config) (done bool, err error) {
	o, err := s.r.Engine.Ledger.Oracle(ctx, s.t.ID)
	if err != nil || o == nil || o.Pinned() {
		s.oracle = o
		return false, err
	}
	rp, ok := s.r.Checker.(Reproducer)
	if !ok {
		return false, fmt.Errorf("task %s asks to reproduce %q first, and this runner's checker cannot run tests on the base", s.t.ID, o.Command)
	}
	s.phase = "reproducing on the base"
	rep, err := rp.Reproduce(ctx, ReproduceInput{Repo: s.t.Repo, Base: s.t.Base, TaskID: s.t.ID, Fence: s.fence, Config: cfg, Selectors: selectorTests(o.Selectors)})
	if err != nil {
		return false, err
	}
	ran := map[string]any{"command": o.Command, "ran": rep.Ran, "passing": rep.Passing, "flaky": rep.Flaky, "broken": rep.Broken, "runs": rep.Runs}
	if code, why := rep.Refusal(); code != "" {
		ran["code"], ran["reason"] = code, why
		// The status first, as park does: whoever reads the event reads
		// the task's end with it.
		if err := s.setTask(ctx, engine.TaskNotReproducible, why); err != nil {
			return false, err
		}
		return true, s.emit(ctx, engine.EventNotReproducible, ran)
	}
	if err := s.pin(ctx, o, rep.Failing); err != nil {
		return false, err
	}
	ran["failing"], ran["files"] = o.Tests, o.Files
	return false, s.emit(ctx, engine.EventReproduced, ran)
}

// pin stores the failing tests as the task's oracle, with the SHA-256 of
// each test's file at the base.
func (s *run) pin(ctx context.Context, o *engine.Oracle, failing []verify.Test) error {
	repo, err := git.Open(ctx, s.t.Repo)
	if err != nil {
		return err
	}
	hashes := map[string]string{}
	for _, t := range failing {
		file := t.File
		if file == "" {
			if file, err = goTestFile(ctx, repo, s.t.Base, t); err != nil {
				return err
			}
		}
		if _, ok := hashes[file]; !ok && file != "" {
			data, err := repo.ShowFile(ctx, s.t.Base, file)
			if err != nil {
				return fmt.Errorf("oracle file %s at the base: %w", file, err)
			}
			sum := sha256.Sum256(data)
			hashes[file] = hex.EncodeToString(sum[:])
		}
		o.Tests = append(o.Tests, engine.OracleTest{Language: t.Language, Package: t.Package, File: file, Name: t.Name})
	}
	for p, h := range hashes {
		o.Files = append(o.Files, engine.OracleFile{Path: p, SHA256: h})
	}
	sort.Slice(o.Files, func(i, j int) bool { return o.Files[i].Path < o.Files[j].Path })
	now := time.Now().UTC()
	o.PinnedAt = &now
	lease := s.curLease()
	if err := s.r.Engine.Ledger.SetOracle(ctx, &lease, s.t.ID, o); err != nil {
		return err
	}
	s.oracle = o
	return nil
}

// goTestFile is the _test.go file of t's package at the base that
// declares t's top-level test function (Go reports no file per test).
func goTestFile(ctx context.Context, repo *git.Repo, base string, t verify.Test) (string, error) {
	args := []string{"ls-tree", "--name-only", base}
	if dir := strings.TrimPrefix(path.Clean(t.Package), "./"); dir != "." {
		args = append(args, "--", dir+"/")
	}
	out, err := repo.Git(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("listing %s at the base: %w", t.Package, err)
	}
	top, _, _ := strings.Cut(t.Name, "/")
	decl := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(top) + `\(`)
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := repo.ShowFile(ctx, base, f)
		if err == nil && decl.Match(data) {
			return f, nil
		}
	}
	return "", nil
}

func selectorTests(sels []engine.OracleTest) []verify.Test {
	out := make([]verify.Test, len(sels))
	for i, t := range sels {
		out[i] = verify.Test{Language: t.Language, Package: t.Package, File: t.File, Name: t.Name}
	}
	return out
}
