package suite

import (
	"context"
	"fmt"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
)

// Grading on a clean snapshot. The agent's change is what git sees of the
// task branch, base..head: nothing left in the worktree (untracked or
// ignored files, caches) reaches grading. The snapshot is a fresh export
// of the base with that change laid over it, except test infrastructure
// the task does not allow changing, which stays as the base has it; the
// hidden check files are written last, then the checks run on the host.

// snapshot is a clean snapshot of one trial's result.
type snapshot struct {
	Dir      string
	Change   *verify.Change
	Restored []string // test infrastructure left at the base
	close    func() error
}

// Close removes the snapshot.
func (s *snapshot) Close() error { return s.close() }

// cleanSnapshot exports the base of repoDir with the change base..head,
// test infrastructure restored unless t.MayChange allows it, and the
// hidden files (canaries planted) written over it.
func cleanSnapshot(ctx context.Context, repoDir, base, head string, t bench.Task, fx bench.Fixture, c Canaries) (*snapshot, error) {
	repo, err := git.Open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	change, err := gitchange.Load(ctx, repo, base, head)
	if err != nil {
		return nil, fmt.Errorf("the task's change: %w", err)
	}
	s := &snapshot{Change: change, close: change.Workspace.Close}
	var overlay []verify.FileChange
	for _, f := range change.Files {
		if app.IsTestInfrastructure(f.Path) && !mayChange(t.MayChange, f.Path) {
			s.Restored = append(s.Restored, f.Path)
			continue
		}
		if f.Status != verify.Deleted && f.Head == nil {
			f.Head = []byte{}
		}
		overlay = append(overlay, f)
	}
	hidden, err := bench.ExpandCanaries(fx.Hidden, c)
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.Dir, err = change.Workspace.Materialize(ctx, verify.BaseSide, overlay); err != nil {
		s.Close()
		return nil, fmt.Errorf("the clean snapshot: %w", err)
	}
	// Last, and as the premise tests write them: a Rust source file's
	// hidden tests are spliced into the snapshot's file, so the hidden
	// file's code (the reference's fix) never replaces the agent's.
	if err := bench.WriteHidden(s.Dir, hidden, app.TestSplicer(t.Language)); err != nil {
		s.Close()
		return nil, fmt.Errorf("the hidden files: %w", err)
	}
	return s, nil
}

// mayChange reports whether one of the task's globs allows p
// (bench.MatchPath).
func mayChange(globs []string, p string) bool {
	for _, g := range globs {
		if bench.MatchPath(g, p) {
			return true
		}
	}
	return false
}

// runChecks runs the task's hidden checks, read by parse (nil:
// bench.ParseCheck), on the snapshot and grades them: pass when every
// selected test passed, fail when one failed or none was selected, error
// when they could not run.
func runChecks(ctx context.Context, eng *app.Engine, dir string, t bench.Task, parse func(string) ([]verify.Test, error)) (bench.Outcome, string) {
	if len(t.Checks) == 0 {
		return bench.Pass, ""
	}
	if parse == nil {
		parse = bench.ParseCheck
	}
	var sels []verify.Test
	for _, c := range t.Checks {
		ts, err := parse(c)
		if err != nil {
			return bench.Error, fmt.Sprintf("the hidden check %q: %v", c, err)
		}
		sels = append(sels, ts...)
	}
	rep, err := eng.RunChecks(ctx, app.ChecksRequest{Dir: dir, Selectors: sels, Config: config.Default()})
	if err != nil {
		return bench.Error, fmt.Sprintf("running the hidden checks: %v", err)
	}
	var why []string
	if len(rep.Failing) > 0 {
		ids := make([]string, len(rep.Failing))
		for i, ft := range rep.Failing {
			ids[i] = ft.ID()
		}
		why = append(why, "failed: "+strings.Join(ids, ", "))
	}
	if len(rep.Broken) > 0 {
		why = append(why, "did not run: "+strings.Join(rep.Broken, "; "))
	}
	if len(rep.Flaky) > 0 {
		why = append(why, "flaky: "+strings.Join(rep.Flaky, ", "))
	}
	if len(rep.Ran) == 0 {
		why = append(why, "the checks selected no test")
	}
	if len(why) > 0 {
		return bench.Fail, "hidden checks " + strings.Join(why, "; ")
	}
	return bench.Pass, ""
}
