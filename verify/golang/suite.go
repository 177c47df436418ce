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

	// Patterns per module root, relative to that root.
	perRoot := map[string][]string{}
	var order []string
	add := func(root, pattern string) {
		if _, ok := perRoot[root]; !ok {
			order = append(order, root)
		}
		perRoot[root] = append(perRoot[root], pattern)
	}
	var reported []string
	if targets == nil {
		for _, root := range l.Roots {
			add(root, "./...")
			reported = append(reported, joinPattern(root, "./..."))
		}
	} else {
		for _, t := range targets {
			dirPart, _ := strings.CutSuffix(t, "/...")
			if t == "./..." {
				dirPart = "."
			}
			if err := checkPackage(dirPart); err != nil {
				return verify.SuiteResult{}, fmt.Errorf("go adapter: target %q: %w", t, err)
			}
			root, pattern, ok := inModule(l, t)
			if !ok {
				a.note("go: target %s is in no module of the repository; not run", t)
				continue
			}
			add(root, pattern)
			reported = append(reported, t)
		}
	}

	out := verify.SuiteResult{Outcome: verify.Pass, Targets: reported}
	mods := modulePaths(dir, l)
	keepArgs, keepEnv := keepBinaries(dir, keep)
	var details []string
	timedOut, buildBroken, failed := false, false, false
	for _, root := range order {
		cwd, env, flags := a.goCommand(dir, l, root)
		// -count=1: the gate judges runs, never results recalled from go's
		// test cache (which a GOFLAGS=-trimpath makes reachable across
		// snapshots with the same content).
		args := append([]string{a.goBin(), "test", "-json", "-vet=off", "-count=1"}, flags...)
		args = append(args, keepArgs...)
		env = append(env, keepEnv...)
		var limit time.Duration
		if timeout > 0 {
			args = append(args, "-timeout", timeout.String())
			limit = timeout + buildAllowance
		}
		args = append(args, perRoot[root]...)
		res, err := r.Run(ctx, sandbox.Command{Dir: cwd, Args: args, Env: env, Timeout: limit})
		if errors.Is(err, sandbox.ErrNotFound) {
			return verify.SuiteResult{Outcome: verify.EnvError, Targets: reported, Detail: fmt.Sprintf("%s not found: %s", a.goBin(), installHint), Duration: time.Since(start)}, nil
		}
		if err != nil {
			return verify.SuiteResult{}, fmt.Errorf("go adapter: go test in %s: %w", root, err)
		}
		stream, err := ParseTestJSON(bytes.NewReader(res.Stdout))
		if err != nil {
			return verify.SuiteResult{}, fmt.Errorf("go adapter: reading go test output in %s: %w", root, err)
		}
		if res.TimedOut {
			timedOut = true
			details = append(details, fmt.Sprintf("go test in %s was stopped after %s", root, limit))
		}
		sawFailure := false
		for _, p := range stream.Packages {
			if toolchain := strings.TrimSpace(stream.BuildErrorText(p)); p.BuildFailed() && isToolchainProblem(toolchain) {
				return verify.SuiteResult{Outcome: verify.EnvError, Targets: reported, Detail: toolchainDetail(toolchain), Duration: time.Since(start)}, nil
			}
			if res.TimedOut && p.Action == "" {
				// The runner killed go test at its limit while this
				// package ran: a test that never ended was stopped, it
				// did not fail.
				p.TimedOut = true
			}
			out.Results = append(out.Results, perTest(p, mods)...)
			out.Units = append(out.Units, unitOf(stream, p, mods))
			switch {
			case p.BuildFailed():
				buildBroken, sawFailure = true, true
				out.Failed = append(out.Failed, p.Package)
				details = append(details, excerpt(stream.BuildErrorText(p)))
			case p.TimedOut:
				timedOut, sawFailure = true, true
				out.Failed = append(out.Failed, p.Package)
				details = append(details, p.Package+": "+excerpt(timeoutText(p)))
			case p.Action == "fail":
				sawFailure = true
				failed = true
				n := len(out.Failed)
				for _, t := range p.Tests {
					if t.Action == "fail" || t.Action == "" {
						out.Failed = append(out.Failed, p.Package+"."+t.Name)
						if len(details) < 5 {
							details = append(details, p.Package+"."+t.Name+": "+excerpt(filterOutput(t.Output)))
						}
					}
				}
				if len(out.Failed) == n {
					out.Failed = append(out.Failed, p.Package)
					details = append(details, p.Package+": "+excerpt(filterOutput(p.Output)))
				}
			}
		}
		if res.ExitCode != 0 && !sawFailure && !res.TimedOut {
			text := strings.TrimSpace(strings.Join(append(stream.Plain, string(res.Stderr)), "\n"))
			if text == "" {
				text = fmt.Sprintf("go test exited with status %d", res.ExitCode)
			}
			if isToolchainProblem(text) {
				return verify.SuiteResult{Outcome: verify.EnvError, Targets: reported, Detail: toolchainDetail(text), Duration: time.Since(start)}, nil
			}
			buildBroken = true
			// The go command failed before any package ran: every test
			// of this module is as unbuildable as a package that fails.
			out.Units = append(out.Units, verify.UnitResult{Unit: "*", Outcome: verify.BuildError, Detail: excerpt(text)})
			out.Failed = append(out.Failed, joinPattern(root, "./..."))
			details = append(details, excerpt(text))
		}
	}
	switch {
	case timedOut:
		out.Outcome = verify.Timeout
	case buildBroken:
		out.Outcome = verify.BuildError
	case failed:
		out.Outcome = verify.Fail
	}
	out.Detail = excerpt(strings.Join(details, "\n"))
	out.Duration = time.Since(start)
	return out, nil
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
		if p.Action == "pass" && r.Outcome == verify.Fail {
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
