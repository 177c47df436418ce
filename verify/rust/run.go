package rust

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// installHint is what a user without a Rust toolchain is told to do.
const installHint = "install Rust from https://rustup.rs or put cargo on PATH"

// buildAllowance bounds compiling one target's tests: the test timeout
// starts after it, as libtest has no timeout of its own.
const buildAllowance = 10 * time.Minute

// TargetDirName is the CARGO_TARGET_DIR bcode gives cargo inside each
// snapshot, so nothing is built into (or read from) a target/ the
// repository carries: output, never part of the change.
const TargetDirName = ".bcode-cargo-target"

// RunTests implements verify.Adapter. Tests are grouped by their target;
// each target is compiled once (`cargo test --no-run`: a target that does
// not compile gives BuildError to its tests), then run opts.Count times,
// each round a process of its own, with the tests' names and --exact. A
// round's timeout is opts.Timeout; compiling has buildAllowance.
func (a *Adapter) RunTests(ctx context.Context, r sandbox.Runner, dir string, tests []verify.Test, opts verify.RunOptions) ([]verify.TestResult, error) {
	if r == nil {
		return nil, errors.New("rust adapter: no runner given")
	}
	if opts.Count < 0 || opts.Timeout < 0 {
		return nil, fmt.Errorf("rust adapter: run count %d or timeout %s is negative", opts.Count, opts.Timeout)
	}
	opts.Count = max(opts.Count, 1)
	var order []string
	byUnit := map[string][]verify.Test{}
	for _, t := range tests {
		if t.Language != "" && t.Language != a.Language() {
			return nil, fmt.Errorf("rust adapter: test %s is a %s test, not a Rust one", t.ID(), t.Language)
		}
		if strings.HasPrefix(t.Name, "-") || t.Name == "" {
			return nil, fmt.Errorf("rust adapter: %q is not a test name", t.Name)
		}
		key := t.Package
		if isDocTest(t.Name) {
			key += "\x00doc"
		}
		if _, ok := byUnit[key]; !ok {
			order = append(order, key)
		}
		if !containsName(byUnit[key], t.Name) {
			byUnit[key] = append(byUnit[key], t)
		}
	}
	var out []verify.TestResult
	for _, key := range order {
		res, err := a.runUnit(ctx, r, dir, byUnit[key], opts)
		out = append(out, res...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func containsName(ts []verify.Test, name string) bool {
	for _, t := range ts {
		if t.Name == name {
			return true
		}
	}
	return false
}

// isDocTest reports whether name is a doc test's ("src/lib.rs - add (line 3)").
func isDocTest(name string) bool { return strings.Contains(name, " - ") }

// unitRuns are the results one target's tests have so far.
type unitRuns struct {
	tests []verify.Test
	count int
	got   map[string][]verify.TestResult
}

func (u *unitRuns) fill(t verify.Test, o verify.Outcome, detail string) {
	for len(u.got[t.Name]) < u.count {
		u.got[t.Name] = append(u.got[t.Name], verify.TestResult{Test: t, Outcome: o, Detail: detail})
	}
}

func (u *unitRuns) fillAll(o verify.Outcome, detail string) []verify.TestResult {
	for _, t := range u.tests {
		u.fill(t, o, detail)
	}
	return u.results()
}

func (u *unitRuns) results() []verify.TestResult {
	var out []verify.TestResult
	for _, t := range u.tests {
		out = append(out, u.got[t.Name]...)
	}
	return out
}

// runUnit compiles and runs the tests of one target.
func (a *Adapter) runUnit(ctx context.Context, r sandbox.Runner, dir string, tests []verify.Test, opts verify.RunOptions) ([]verify.TestResult, error) {
	u := &unitRuns{tests: tests, count: opts.Count, got: map[string][]verify.TestResult{}}
	unit := tests[0].Package
	crateDir, flags, ok := splitUnit(unit)
	if !ok {
		return u.fillAll(verify.NotRun, fmt.Sprintf("%s is not the root file of a cargo test target", unit)), nil
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(inCrate(crateDir, "Cargo.toml")))); err != nil {
		return u.fillAll(verify.NotRun, fmt.Sprintf("no Cargo.toml in %s on this side", crateDir)), nil
	}
	if isDocTest(tests[0].Name) {
		flags = []string{"--doc"}
	} else {
		flags = binFlags(dir, crateDir, flags)
		if o, detail, err := a.build(ctx, r, dir, crateDir, flags, sandbox.ReadLoad().Deadline(buildAllowance, 0)); err != nil || o != verify.Pass {
			return u.fillAll(o, detail), err
		}
	}
	testArgs := []string{"--exact"}
	if isDocTest(tests[0].Name) {
		// rustdoc's tests match no --exact filter; their names, each
		// ending in "(line N)", select them as substrings (docTestFilter:
		// bcode's names drop the line).
		testArgs = nil
	}
	for _, t := range tests {
		if isDocTest(t.Name) {
			testArgs = append(testArgs, docTestFilter(t.Name))
		} else {
			testArgs = append(testArgs, t.Name)
		}
	}
	for range opts.Count {
		res, err := a.cargoTest(ctx, r, dir, crateDir, flags, testArgs, opts.Timeout, opts.Timeout)
		if errors.Is(err, sandbox.ErrNotFound) {
			return u.fillAll(verify.EnvError, a.cargo()+" not found: "+installHint), nil
		}
		if err != nil {
			return u.results(), fmt.Errorf("rust adapter: cargo test %s: %w", unit, err)
		}
		if u.addRound(unit, res, opts.Timeout) {
			break // every test owed more was given Timeout
		}
	}
	return u.results(), nil
}

// addRound records one round's results; it reports whether the round
// timed out, after which nothing runs again (it would only spend the
// timeout again).
func (u *unitRuns) addRound(unit string, res sandbox.Result, timeout time.Duration) bool {
	out := string(res.Stdout)
	found := map[string]caseResult{}
	finished := false
	for _, run := range parseLibtest(out) {
		for _, c := range run.cases {
			found[c.name] = c
		}
		finished = finished || run.finished
	}
	for _, t := range u.tests {
		c, ok := found[t.Name]
		switch {
		case ok:
			u.got[t.Name] = append(u.got[t.Name], verify.TestResult{Test: t, Outcome: c.outcome, Detail: c.detail})
		case res.TimedOut || res.CPULimited:
			u.fill(t, verify.Timeout, fmt.Sprintf("cargo test %s was stopped after %s (of wall-clock or CPU time)", unit, timeout))
		case !finished && res.ExitCode != 0:
			// The binary ended before its summary: a crash (an abort,
			// a stack overflow) under some test.
			u.got[t.Name] = append(u.got[t.Name], verify.TestResult{Test: t, Outcome: verify.NotRun,
				Detail: excerpt("the test binary ended without a result for this test:\n" + tail(out))})
		default:
			u.got[t.Name] = append(u.got[t.Name], verify.TestResult{Test: t, Outcome: verify.NotRun,
				Detail: fmt.Sprintf("cargo test %s reported no result for %s (no such test on this side?)", unit, t.Name)})
		}
	}
	return res.TimedOut || res.CPULimited
}

// tail keeps the last detailLines lines of s.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-detailLines):], "\n")
}

// build compiles a crate's selected test targets without running them.
// It returns Pass, or the outcome every test of the targets gets.
func (a *Adapter) build(ctx context.Context, r sandbox.Runner, dir, crateDir string, flags []string, timeout time.Duration) (verify.Outcome, string, error) {
	res, err := a.cargoTest(ctx, r, dir, crateDir, append(append([]string(nil), flags...), "--no-run"), nil, timeout, 0)
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return verify.EnvError, a.cargo() + " not found: " + installHint, nil
	case err != nil:
		return verify.NotRun, "", fmt.Errorf("rust adapter: cargo test --no-run in %s: %w", crateDir, err)
	case res.TimedOut:
		return verify.Timeout, fmt.Sprintf("compiling the tests of %s took longer than %s", crateDir, timeout), nil
	case res.ExitCode != 0:
		text := string(res.Stdout)
		if isToolchainProblem(text) {
			return verify.EnvError, excerpt(text), nil
		}
		return verify.BuildError, compilerErrors(text), nil
	}
	return verify.Pass, "", nil
}

// isToolchainProblem tells a cargo that cannot work here (no toolchain,
// a dependency it would have to download) from code that does not compile.
func isToolchainProblem(text string) bool {
	for _, s := range []string{"rustup could not choose a version", "no default toolchain", "toolchain '", "attempting to make an HTTP request", "--offline", "failed to get `", "no matching package named"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// cargoTest runs `cargo test --offline` on one crate with stdout and
// stderr in one stream, in order, as cargo's headers and libtest's lines
// must be read together. testArgs, when set, go to the test binaries.
//
// cpu, when set, is each process's CPU limit (sandbox.Command.CPULimit):
// the test binary's, so that a test spinning in a loop ends after the same
// work however loaded the machine is.
func (a *Adapter) cargoTest(ctx context.Context, r sandbox.Runner, dir, crateDir string, flags, testArgs []string, timeout, cpu time.Duration) (sandbox.Result, error) {
	args := []string{a.cargo(), "test", "--offline", "--no-fail-fast", "--manifest-path", inCrate(crateDir, "Cargo.toml")}
	args = append(args, flags...)
	if testArgs != nil {
		args = append(append(args, "--"), testArgs...)
	}
	return r.Run(ctx, sandbox.Command{
		Dir:      dir,
		Args:     args,
		Env:      a.env(dir),
		Timeout:  timeout,
		CPULimit: cpu,
		Stdout:   io.Discard,
		Stderr:   io.Discard,
	})
}

func (a *Adapter) env(dir string) []string {
	env := []string{
		"CARGO_TARGET_DIR=" + filepath.Join(dir, TargetDirName),
		"CARGO_TERM_COLOR=never",
		"CARGO_NET_OFFLINE=true",
		"CARGO_INCREMENTAL=0",
		"RUST_BACKTRACE=0",
	}
	return append(env, a.Env...)
}

// binFlags narrows --bins (src/main.rs) to the bin src/main.rs builds,
// named after the package, so the tests of src/bin/* do not answer for it.
func binFlags(dir, crateDir string, flags []string) []string {
	if len(flags) != 1 || flags[0] != "--bins" {
		return flags
	}
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return flags
	}
	defer conf.Close()
	c, ok := readManifest(conf, inCrate(crateDir, "Cargo.toml"))
	if !ok || c.name == "" {
		return flags
	}
	return []string{"--bin", c.name}
}
