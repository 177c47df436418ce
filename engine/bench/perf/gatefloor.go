package perf

// The gate's floor (`bcode bench perf gate -real -floor`): the runs the issue's
// definition of a verdict needs, made plainly, with no bcode at all. The
// gate must run four file sets (the base; the base with the head's tests,
// for fail-to-pass; the head; the head's code with the base's tests, for
// old tests on new code) and repeat each fail-to-pass candidate in
// processes of its own. Run plainly, two at a time as the gate runs them on
// this machine, those runs are the least any implementation of that
// definition pays here: floor / plain is the best ratio a gate can reach,
// and gate / floor is what bcode adds on top.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/verify"
)

// floorRun is one case's floor: the four file sets, then the repeats.
type floorRun struct {
	sets, repeats time.Duration
	note          string
}

func (f floorRun) total() time.Duration { return f.sets + f.repeats }

// isHandTestFile is the hand run's rule for a test or test-support file
// (mkcase.py's is_test_file): the files "the head's tests" means when the
// labels were made.
func isHandTestFile(p string) bool {
	base := path.Base(p)
	parts := strings.Split(p, "/")
	if strings.HasSuffix(base, "_test.go") || (strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py")) ||
		strings.HasSuffix(base, "_test.py") || base == "conftest.py" {
		return true
	}
	for _, el := range parts[:len(parts)-1] {
		if el == "testdata" {
			return true
		}
	}
	return len(parts) > 1 && (parts[0] == "tests" || parts[0] == "test" || parts[0] == "testing")
}

// gateFloor lays out the four file sets of base..head (head "" is the
// working tree) and times them as the gate schedules its runs: two at a
// time, then each fail-to-pass repeat round the gate made (Python: a
// pytest of the repeated node IDs per round and side, two at a time). Go's
// repeats are left out: the gate runs the binaries it kept, 50–100 ms in
// all, so the floor stays below what the gate needs.
func gateFloor(ctx context.Context, repo, base, head string, rep *verify.Report, scratch string, rounds int) (floorRun, error) {
	defer os.RemoveAll(scratch)
	var fr floorRun
	dirs, changed, err := layOutFloorSets(ctx, repo, base, head, scratch)
	if err != nil {
		return fr, err
	}
	goTargets, pyTargets := splitTargets(rep, dirs["head"])
	run := func(dir string, goT, pyT []string) func() {
		return func() { plainRun(ctx, dir, goT, pyT) }
	}
	u := candidateUnits(changed, goTargets, pyTargets)
	// When the change is tests only, or changes no test, the mixed sets are
	// the base and the head again, which the gate does not run twice.
	fns := []func(){run(dirs["head"], goTargets, pyTargets), run(dirs["base"], goTargets, pyTargets)}
	switch {
	case !u.anyTest:
		fr.note = "no test changed: the mixed sets are the base and the head"
	case u.testsOnly:
		fr.note = "tests only: the mixed sets are the head and the base"
	default:
		fns = append([]func(){run(dirs["mid"], u.goUnits, u.pyUnits)}, append(fns, run(dirs["old"], u.goUnits, u.pyUnits))...)
	}
	start := time.Now()
	parallel2(fns...)
	fr.sets = time.Since(start)
	if ctx.Err() != nil {
		return fr, ctx.Err()
	}
	fr.repeats = timeRepeats(ctx, dirs, pythonRepeats(rep), rounds)
	return fr, ctx.Err()
}

// layOutFloorSets exports the four file sets under scratch (base, mid:
// the base with the head's changed test files, head, old: the head with
// the base's) and returns their directories by name and the changed paths.
func layOutFloorSets(ctx context.Context, repo, base, head, scratch string) (map[string]string, []string, error) {
	dirs := map[string]string{}
	for _, side := range []string{"base", "mid", "head", "old"} {
		dirs[side] = filepath.Join(scratch, side)
	}
	if err := exportRev(ctx, repo, base, dirs["base"]); err != nil {
		return nil, nil, err
	}
	if err := exportRev(ctx, repo, base, dirs["mid"]); err != nil {
		return nil, nil, err
	}
	for _, side := range []string{"head", "old"} {
		var err error
		if head == "" {
			err = copyWorktree(ctx, repo, dirs[side])
		} else {
			err = exportRev(ctx, repo, head, dirs[side])
		}
		if err != nil {
			return nil, nil, err
		}
	}
	// The changed test files: the head's over the base (mid), the base's
	// over the head (old); a file one side lacks is removed.
	changed, err := changedPaths(ctx, repo, base, head)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range changed {
		if !isHandTestFile(p) {
			continue
		}
		if err := copyOrRemove(filepath.Join(dirs["head"], p), filepath.Join(dirs["mid"], p)); err != nil {
			return nil, nil, err
		}
		if err := copyOrRemove(filepath.Join(dirs["base"], p), filepath.Join(dirs["old"], p)); err != nil {
			return nil, nil, err
		}
	}
	return dirs, changed, nil
}

// floorUnits are what the gate runs on the two mixed sets, and what the
// change's files are.
type floorUnits struct {
	goUnits, pyUnits   []string
	testsOnly, anyTest bool
}

// candidateUnits are the candidate units the gate runs on the two mixed
// sets: the changed Python test files, the packages of the changed Go test
// files (all targets when there are none).
func candidateUnits(changed, goTargets, pyTargets []string) floorUnits {
	u := floorUnits{testsOnly: true}
	goSeen := map[string]bool{}
	for _, p := range changed {
		u.testsOnly = u.testsOnly && isHandTestFile(p)
		u.anyTest = u.anyTest || isHandTestFile(p)
		for _, t := range pyTargets {
			if f, _, _ := strings.Cut(t, "::"); f == p {
				u.pyUnits = append(u.pyUnits, t)
			}
		}
		if strings.HasSuffix(p, "_test.go") && len(goTargets) > 0 {
			if unit := "./" + path.Dir(p); !goSeen[unit] {
				goSeen[unit] = true
				u.goUnits = append(u.goUnits, unit)
			}
		}
	}
	if len(u.pyUnits) == 0 {
		u.pyUnits = pyTargets
	}
	if len(u.goUnits) == 0 {
		u.goUnits = goTargets
	}
	return u
}

// pythonRepeats are the node IDs of the Python tests the gate repeated,
// sorted.
func pythonRepeats(rep *verify.Report) []string {
	var ids []string
	for _, t := range rep.Tests {
		if t.Runs > 1 && t.Language == "python" {
			f := t.File
			if f == "" {
				f = t.Package
			}
			ids = append(ids, f+"::"+t.Name)
		}
	}
	sort.Strings(ids)
	return ids
}

// timeRepeats times the repeat rounds: a pytest of ids per round on the
// mid and head sets, the two sides at once; zero when there is nothing to
// repeat.
func timeRepeats(ctx context.Context, dirs map[string]string, ids []string, rounds int) time.Duration {
	if len(ids) == 0 || rounds <= 0 {
		return 0
	}
	start := time.Now()
	side := func(dir string) func() {
		return func() {
			for range rounds {
				plainRun(ctx, dir, nil, ids)
			}
		}
	}
	parallel2(side(dirs["mid"]), side(dirs["head"]))
	return time.Since(start)
}

// splitTargets is plainRuns' choice of targets: the gate's targeted ones,
// else everything.
func splitTargets(rep *verify.Report, headDir string) (goTargets, pyTargets []string) {
	for _, t := range rep.Suite.Targeted.Targets {
		if strings.HasSuffix(t, ".py") {
			pyTargets = append(pyTargets, t)
		} else {
			goTargets = append(goTargets, t)
		}
	}
	if len(goTargets)+len(pyTargets) == 0 {
		switch {
		case fileExists(filepath.Join(headDir, "go.mod")):
			goTargets = []string{"./..."}
		case fileExists(filepath.Join(headDir, "Cargo.toml")):
			goTargets = []string{"Cargo.toml"}
		default:
			pyTargets = []string{"."}
		}
	}
	return goTargets, pyTargets
}

// rustCrates splits the Rust units out of goTargets (a unit is a cargo
// target's root file, "src/lib.rs" or "calc/tests/api.rs", verify/rust;
// "Cargo.toml" stands for the whole crate) and returns the crate
// directories they are in, and the Go packages left.
func rustCrates(goTargets []string) (crates, goPkgs []string) {
	for _, t := range goTargets {
		if !strings.HasSuffix(t, ".rs") && path.Base(t) != "Cargo.toml" {
			goPkgs = append(goPkgs, t)
			continue
		}
		dir := path.Dir(t)
		parts := strings.Split(t, "/")
		for i, p := range parts[:len(parts)-1] {
			if slices.Contains([]string{"src", "tests", "benches", "examples"}, p) {
				dir = path.Join(append([]string{"."}, parts[:i]...)...)
				break
			}
		}
		if !slices.Contains(crates, dir) {
			crates = append(crates, dir)
		}
	}
	return crates, goPkgs
}

// plainRun is one plain run in dir: `go test -count=1 -vet=off` of the Go
// targets, `cargo test --offline` of each crate the Rust targets are in,
// pytest of the Python ones that exist there. Failing tests are
// results, not errors.
func plainRun(ctx context.Context, dir string, goTargets, pyTargets []string) {
	crates, goTargets := rustCrates(goTargets)
	for _, crate := range crates {
		// A person runs the crate's tests; its own target directory, as
		// each snapshot is built once.
		cmd := exec.CommandContext(ctx, "cargo", "test", "--offline", "--no-fail-fast")
		cmd.Dir = filepath.Join(dir, crate)
		cmd.Env = append(os.Environ(), "CARGO_TARGET_DIR="+filepath.Join(dir, crate, "target"))
		_ = cmd.Run()
	}
	if len(goTargets) > 0 {
		cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-count=1", "-vet=off"}, goTargets...)...)
		cmd.Dir = dir
		_ = cmd.Run()
	}
	var existing []string
	for _, t := range pyTargets {
		file, _, _ := strings.Cut(t, "::")
		if fileExists(filepath.Join(dir, file)) {
			existing = append(existing, t)
		}
	}
	if len(existing) > 0 {
		cmd := exec.CommandContext(ctx, pytestPython, append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider"}, existing...)...)
		cmd.Dir = dir
		_ = cmd.Run()
	}
}

// parallel2 runs fns two at a time, as the gate's run slots on a 2-core
// machine (verify's sides()).
func parallel2(fns ...func()) {
	slots := make(chan struct{}, 2)
	done := make(chan struct{}, len(fns))
	for _, fn := range fns {
		go func() {
			slots <- struct{}{}
			defer func() { <-slots; done <- struct{}{} }()
			fn()
		}()
	}
	for range fns {
		<-done
	}
}

// changedPaths lists the paths that differ between base and head (head
// "": the working tree).
func changedPaths(ctx context.Context, repo, base, head string) ([]string, error) {
	args := []string{"-C", repo, "diff", "--name-only", "--no-renames", "-z", base}
	if head != "" {
		args = append(args, head)
	}
	out, err := exec.CommandContext(ctx, "git", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("git diff %s %s: %w", base, head, err)
	}
	var ps []string
	for _, p := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if p != "" {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// copyOrRemove makes dst what src is: its content, or absent.
func copyOrRemove(src, dst string) error {
	data, err := os.ReadFile(src)
	if os.IsNotExist(err) {
		if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
