package golang

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// RunSuite implements verify.Adapter: `go test -json -vet=off` over targets
// (nil: ./... of every module) in dir. Failed lists failing tests as
// "importpath.TestName" and packages that fail to build or fail outside
// any test by import path.
func (a *Adapter) RunSuite(ctx context.Context, r sandbox.Runner, dir string, targets []string, timeout time.Duration) (verify.SuiteResult, error) {
	return a.runSuite(ctx, r, dir, targets, nil, timeout)
}

// RunSuiteKeeping implements verify.BinaryKeeper: RunSuite that keeps the
// test binaries of the packages in keep ("." or "./dir") where RunTests
// with Separate set looks for them. See keptBinary.
func (a *Adapter) RunSuiteKeeping(ctx context.Context, r sandbox.Runner, dir string, targets, keep []string, timeout time.Duration) (verify.SuiteResult, error) {
	return a.runSuite(ctx, r, dir, targets, keep, timeout)
}

func (a *Adapter) runSuite(ctx context.Context, r sandbox.Runner, dir string, targets, keep []string, timeout time.Duration) (verify.SuiteResult, error) {
	start := time.Now()
	if r == nil {
		return verify.SuiteResult{}, errors.New("go adapter: no runner given")
	}
	if timeout < 0 {
		return verify.SuiteResult{}, fmt.Errorf("go adapter: suite timeout %s is negative", timeout)
	}
	l, err := findModules(dir)
	if err != nil {
		return verify.SuiteResult{}, fmt.Errorf("go adapter: finding Go modules in %s: %w", dir, err)
	}
	for _, s := range l.Skipped {
		a.note("go: %s; its tests are not run", s)
	}
	if len(l.Roots) == 0 {
		return verify.SuiteResult{Outcome: verify.Pass, Detail: "no go.mod: no Go tests to run", Duration: time.Since(start)}, nil
	}
	plan, err := a.suitePlan(l, targets)
	if err != nil {
		return verify.SuiteResult{}, err
	}
	envError := func(detail string) verify.SuiteResult {
		return verify.SuiteResult{Outcome: verify.EnvError, Targets: plan.reported, Detail: detail, Duration: time.Since(start)}
	}
	tally := suiteTally{out: verify.SuiteResult{Outcome: verify.Pass, Targets: plan.reported}, mods: modulePaths(dir, l)}
	keepArgs, keepEnv := keepBinaries(dir, keep)
	mains, err := placeGateMains(dir, nil)
	if err != nil {
		return verify.SuiteResult{}, err
	}
	for _, root := range plan.order {
		cwd, env, flags := a.goCommand(dir, l, root)
		gr, gateEnv, err := newGateRun(dir)
		if err != nil {
			return verify.SuiteResult{}, err
		}
		flags = append(flags, mains.flags()...)
		env = append(env, gateEnv...)
		// -count=1: the gate judges runs, never results recalled from go's
		// test cache (which a GOFLAGS=-trimpath makes reachable across
		// snapshots with the same content).
		args := append([]string{a.goBin(), "test", "-json", "-vet=off", "-count=1"}, flags...)
		args = append(args, keepArgs...)
		env = append(env, keepEnv...)
		var limit time.Duration
		if timeout > 0 {
			args = append(args, "-timeout", timeout.String())
			limit = timeout + buildDeadline()
		}
		args = append(args, plan.perRoot[root]...)
		res, err := r.Run(ctx, sandbox.Command{Dir: cwd, Args: args, Env: env, Timeout: limit})
		ends := gr.ends()
		gr.close()
		if errors.Is(err, sandbox.ErrNotFound) {
			return envError(fmt.Sprintf("%s not found: %s", a.goBin(), installHint)), nil
		}
		if err != nil {
			return verify.SuiteResult{}, fmt.Errorf("go adapter: go test in %s: %w", root, err)
		}
		stream, err := ParseTestJSON(bytes.NewReader(res.Stdout))
		if err != nil {
			return verify.SuiteResult{}, fmt.Errorf("go adapter: reading go test output in %s: %w", root, err)
		}
		judgeEnds(stream, mains, tally.mods, ends, "")
		if detail, toolchain := tally.addRun(root, res, stream, limit); toolchain {
			return envError(detail), nil
		}
	}
	return tally.result(start), nil
}

// suitePlan is what one suite run runs: the package patterns per module
// root (relative to that root), the roots in order, and the targets as the
// result reports them.
type suitePlan struct {
	perRoot  map[string][]string
	order    []string
	reported []string
}

// suitePlan places targets (nil: every module whole) in the modules of l.
func (a *Adapter) suitePlan(l layout, targets []string) (suitePlan, error) {
	plan := suitePlan{perRoot: map[string][]string{}}
	add := func(root, pattern string) {
		if _, ok := plan.perRoot[root]; !ok {
			plan.order = append(plan.order, root)
		}
		plan.perRoot[root] = append(plan.perRoot[root], pattern)
	}
	if targets == nil {
		for _, root := range l.Roots {
			add(root, "./...")
			plan.reported = append(plan.reported, joinPattern(root, "./..."))
		}
		return plan, nil
	}
	for _, t := range targets {
		dirPart, _ := strings.CutSuffix(t, "/...")
		if t == "./..." {
			dirPart = "."
		}
		if err := checkPackage(dirPart); err != nil {
			return suitePlan{}, fmt.Errorf("go adapter: target %q: %w", t, err)
		}
		root, pattern, ok := inModule(l, t)
		if !ok {
			a.note("go: target %s is in no module of the repository; not run", t)
			continue
		}
		add(root, pattern)
		plan.reported = append(plan.reported, t)
	}
	return plan, nil
}

// suiteTally folds the go test runs of one suite, one per module root,
// into its result.
type suiteTally struct {
	out                           verify.SuiteResult
	mods                          []modulePath
	details                       []string
	timedOut, buildBroken, failed bool
}

// addRun adds one go test run's packages. toolchain is true when the
// toolchain, not the code, failed: detail says how, and the suite is an
// environment error.
func (t *suiteTally) addRun(root string, res sandbox.Result, stream *Stream, limit time.Duration) (detail string, toolchain bool) {
	if res.TimedOut {
		t.timedOut = true
		t.details = append(t.details, fmt.Sprintf("go test in %s was stopped after %s", root, limit))
	}
	sawFailure := false
	for _, p := range stream.Packages {
		if text := strings.TrimSpace(stream.BuildErrorText(p)); p.BuildFailed() && isToolchainProblem(text) {
			return toolchainDetail(text), true
		}
		if res.TimedOut && p.Action == "" {
			// The runner killed go test at its limit while this
			// package ran: a test that never ended was stopped, it
			// did not fail.
			p.TimedOut = true
		}
		if t.addPackage(stream, p) {
			sawFailure = true
		}
	}
	if res.ExitCode != 0 && !sawFailure && !res.TimedOut {
		text := strings.TrimSpace(strings.Join(append(stream.Plain, string(res.Stderr)), "\n"))
		if text == "" {
			text = fmt.Sprintf("go test exited with status %d", res.ExitCode)
		}
		if isToolchainProblem(text) {
			return toolchainDetail(text), true
		}
		t.buildBroken = true
		// The go command failed before any package ran: every test
		// of this module is as unbuildable as a package that fails.
		t.out.Units = append(t.out.Units, verify.UnitResult{Unit: "*", Outcome: verify.BuildError, Detail: excerpt(text)})
		t.out.Failed = append(t.out.Failed, joinPattern(root, "./..."))
		t.details = append(t.details, excerpt(text))
	}
	return "", false
}

// addPackage adds one package's tests and unit outcome, and reports
// whether it failed (to build, in time, or a test).
func (t *suiteTally) addPackage(stream *Stream, p *PackageRun) bool {
	out := &t.out
	out.Results = append(out.Results, perTest(p, t.mods)...)
	out.Units = append(out.Units, unitOf(stream, p, t.mods))
	switch {
	case p.BuildFailed():
		t.buildBroken = true
		out.Failed = append(out.Failed, p.Package)
		t.details = append(t.details, excerpt(stream.BuildErrorText(p)))
	case p.TimedOut:
		t.timedOut = true
		out.Failed = append(out.Failed, p.Package)
		t.details = append(t.details, p.Package+": "+excerpt(timeoutText(p)))
	case p.Action == "fail":
		t.failed = true
		n := len(out.Failed)
		for _, tr := range p.Tests {
			if tr.Action == "fail" || tr.Action == "" {
				out.Failed = append(out.Failed, p.Package+"."+tr.Name)
				if len(t.details) < 5 {
					t.details = append(t.details, p.Package+"."+tr.Name+": "+excerpt(filterOutput(tr.Output)))
				}
			}
		}
		if len(out.Failed) == n {
			out.Failed = append(out.Failed, p.Package)
			t.details = append(t.details, p.Package+": "+excerpt(filterOutput(p.Output)))
		}
	default:
		return false
	}
	return true
}

// result is the suite's result: its outcome the most serious of its
// runs'.
func (t *suiteTally) result(start time.Time) verify.SuiteResult {
	out := t.out
	switch {
	case t.timedOut:
		out.Outcome = verify.Timeout
	case t.buildBroken:
		out.Outcome = verify.BuildError
	case t.failed:
		out.Outcome = verify.Fail
	}
	out.Detail = excerpt(strings.Join(t.details, "\n"))
	out.Duration = time.Since(start)
	return out
}

func timeoutText(p *PackageRun) string {
	for _, t := range p.Tests {
		if strings.Contains(t.Output, timeoutMarker) {
			return t.Output
		}
	}
	return p.Output
}

// joinPattern expresses a pattern relative to a module root as one
// relative to the snapshot.
func joinPattern(root, pattern string) string {
	if root == "." {
		return pattern
	}
	return "./" + root + strings.TrimPrefix(pattern, ".")
}

// perTest turns every run of every test and subtest of p into a result,
// named by its package directory: outcomes come from the test events, never
// from the package's exit status (a TestMain that calls os.Exit(0) after
// failing tests does not make them pass).
func perTest(p *PackageRun, mods []modulePath) []verify.TestResult {
	unit, ok := unitName(p.Package, mods)
	if !ok {
		return nil
	}
	var out []verify.TestResult
	idx := map[string]int{}
	for _, run := range p.Tests {
		t := verify.Test{Language: "go", Package: unit, Name: run.Name}
		r := runResult(t, run, p.TimedOut)
		if p.Action == "pass" && r.Outcome == verify.Fail && run.Verdict == "" {
			// The test binary exited 0 although a test failed: a
			// TestMain (or an exit hook) swallowed the failure. The
			// failure counts, and the lie is reported as tampering.
			r.Detail = verify.ReportAlteredMarker + " the package's test binary exited 0 (go test says ok) although this test failed: TestMain or an exit hook swallowed the failure\n" + r.Detail
		}
		if i, ok := idx[run.Name]; ok {
			// A second run of the same name (-count, or a name the
			// testing package made unique too late): the worse one counts.
			if r.Outcome != verify.Pass && out[i].Outcome == verify.Pass {
				out[i] = r
			}
			continue
		}
		idx[run.Name] = len(out)
		out = append(out, r)
	}
	return out
}

// unitOf says whether p's tests could run at all.
func unitOf(s *Stream, p *PackageRun, mods []modulePath) verify.UnitResult {
	unit, ok := unitName(p.Package, mods)
	if !ok {
		unit = p.Package
	}
	u := verify.UnitResult{Unit: unit, Outcome: verify.Pass}
	switch {
	case p.BuildFailed():
		u.Outcome, u.Detail = verify.BuildError, excerpt(s.BuildErrorText(p))
	case p.TimedOut:
		u.Outcome, u.Detail = verify.Timeout, excerpt(timeoutText(p))
	case p.Action == "fail" && len(p.Tests) == 0:
		// TestMain or an initializer failed before any test ran.
		u.Outcome, u.Detail = verify.Fail, excerpt("the test binary failed before running any test:\n"+filterOutput(p.Output))
	case p.Action == "":
		u.Outcome, u.Detail = verify.Fail, "the test binary exited before reporting a result"
	}
	return u
}

// modulePath is one module of a snapshot: its root and its path.
type modulePath struct {
	root string // slash-separated, relative to the snapshot
	path string
}

// modulePaths reads the module path of every root of l, longest first.
func modulePaths(dir string, l layout) []modulePath {
	var out []modulePath
	for _, root := range l.Roots {
		data, err := sandbox.ReadFile(dir, path.Join(root, "go.mod"), 1<<20)
		if err != nil {
			continue
		}
		if mp := modfileModule(data); mp != "" {
			out = append(out, modulePath{root: root, path: mp})
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i].path) > len(out[j].path) })
	return out
}

// modfileModule is the module path a go.mod declares.
func modfileModule(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" {
			return unquote(f[1])
		}
	}
	return ""
}

// unitName is the package directory ("./dir", "." for the root) of an
// import path, the form Test.Package and suite targets use.
func unitName(importPath string, mods []modulePath) (string, bool) {
	for _, m := range mods {
		rest, ok := strings.CutPrefix(importPath, m.path)
		if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
			continue
		}
		return packageOfDir(path.Join(m.root, strings.TrimPrefix(rest, "/"))), true
	}
	return "", false
}

// toolchainDetail names what is missing: a C compiler for cgo gets the
// fix spelled out.
func toolchainDetail(text string) string {
	if strings.Contains(text, "C compiler") {
		return "cgo needs a C compiler that is not installed (apt-get install gcc, or set CC): " + firstLineOf(text, "C compiler")
	}
	return excerpt(text)
}

func firstLineOf(text, substr string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(text)
}
