package golang

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// installHint is what a user without a Go toolchain is told to do.
const installHint = "install Go from https://go.dev/dl or put go on PATH"

// detailLines caps the excerpt kept of a failure's output.
const detailLines = 20

// buildAllowance is added to a batch's test timeout for the command as a
// whole: go test's -timeout starts after compiling, which can take longer
// than the tests on a cold cache.
const buildAllowance = 2 * time.Minute

// buildDeadline is buildAllowance on the machine as loaded now
// (sandbox.Load.Deadline).
func buildDeadline() time.Duration { return sandbox.ReadLoad().Deadline(buildAllowance, 0) }

// RunTests implements verify.Adapter. Tests are grouped by package and each
// package's tests run in as few `go test -json` invocations as their
// -run patterns allow. When a run stops early (a panic or a crash ends the
// test binary), the tests still owed results are run again, so every test
// gets exactly opts.Count results. opts.Count 0 means 1.
func (a *Adapter) RunTests(ctx context.Context, r sandbox.Runner, dir string, tests []verify.Test, opts verify.RunOptions) ([]verify.TestResult, error) {
	if r == nil {
		return nil, errors.New("go adapter: no runner given")
	}
	if opts.Count < 0 {
		return nil, fmt.Errorf("go adapter: run count %d is negative", opts.Count)
	}
	if opts.Count == 0 {
		opts.Count = 1
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("go adapter: test timeout %s is negative", opts.Timeout)
	}
	byPkg := map[string][]verify.Test{}
	var pkgs []string
	for _, t := range tests {
		if t.Language != "" && t.Language != a.Language() {
			return nil, fmt.Errorf("go adapter: test %s is a %s test, not a Go one", t.ID(), t.Language)
		}
		if err := checkPackage(t.Package); err != nil {
			return nil, fmt.Errorf("go adapter: test %s: %w", t.Name, err)
		}
		if err := checkTestName(t.Name); err != nil {
			return nil, fmt.Errorf("go adapter: test %q in %s: %w", t.Name, t.Package, err)
		}
		if _, ok := byPkg[t.Package]; !ok {
			pkgs = append(pkgs, t.Package)
		}
		byPkg[t.Package] = append(byPkg[t.Package], t)
	}
	sort.Strings(pkgs)
	l, err := findModules(dir)
	if err != nil {
		return nil, fmt.Errorf("go adapter: finding Go modules in %s: %w", dir, err)
	}
	var out []verify.TestResult
	for _, pkg := range pkgs {
		var res []verify.TestResult
		var err error
		if opts.Separate && opts.Count > 1 {
			res, err = a.runSeparately(ctx, r, dir, l, pkg, dedupe(byPkg[pkg]), opts)
		} else {
			res, err = a.runPackage(ctx, r, dir, l, pkg, dedupe(byPkg[pkg]), opts, "")
		}
		if err != nil {
			return out, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// runSeparately runs pkg's tests opts.Count times, each round a start of
// its own of the test binary, compiled once. Results come test by test,
// each test's rounds in order, as runPackage returns them.
func (a *Adapter) runSeparately(ctx context.Context, r sandbox.Runner, dir string, l layout, pkg string, tests []verify.Test, opts verify.RunOptions) ([]verify.TestResult, error) {
	bin, err := a.compileTest(ctx, r, dir, l, pkg, opts)
	if errors.Is(err, sandbox.ErrNotFound) {
		bin, err = "", nil // runPackage says so for every test
	}
	if err != nil {
		return nil, fmt.Errorf("go adapter: go test -c %s: %w", pkg, err)
	}
	if bin != "" {
		// Nothing after the repeats (mutation evidence copies the
		// snapshot) should find the binary in the tree.
		defer func() {
			os.Remove(bin)
			os.Remove(filepath.Dir(bin)) // only when empty
		}()
	}
	once := opts
	once.Count = 1
	byName := map[string][]verify.TestResult{}
	for range opts.Count {
		res, err := a.runPackage(ctx, r, dir, l, pkg, tests, once, bin)
		if err != nil {
			return nil, err
		}
		for _, x := range res {
			byName[x.Test.Name] = append(byName[x.Test.Name], x)
		}
	}
	return collect(tests, byName), nil
}

func dedupe(ts []verify.Test) []verify.Test {
	seen := map[string]bool{}
	var out []verify.Test
	for _, t := range ts {
		if !seen[t.Name] {
			seen[t.Name] = true
			out = append(out, t)
		}
	}
	return out
}

// checkPackage accepts the package patterns ChangedTests produces: "." or
// "./dir" below the repository root.
func checkPackage(p string) error {
	if p == "." {
		return nil
	}
	rest, ok := strings.CutPrefix(p, "./")
	if !ok || rest == "" || strings.Contains(p, "...") || strings.HasPrefix(rest, "/") {
		return fmt.Errorf("package %q is not a directory below the repository (\".\" or \"./dir\")", p)
	}
	for _, el := range strings.Split(rest, "/") {
		if el == ".." || el == "." || el == "" {
			return fmt.Errorf("package %q is not a clean directory below the repository", p)
		}
	}
	return nil
}

func checkTestName(n string) error {
	top, _, _ := strings.Cut(n, "/")
	if top == "" || strings.ContainsAny(top, " \t\n") {
		return errors.New("not a Go test name")
	}
	return nil
}

// invocation is one `go test` run: a -run pattern and the requested tests
// whose results it yields.
type invocation struct {
	pattern string
	tests   []verify.Test
}

// plan groups tests into invocations: all top-level tests together
// (^(A|B)$), and subtests by their parent path (^A$/^(x|y)$), because a
// pattern with levels of different depth would select more than asked.
// Subtests of a test that runs whole come out of its run.
func plan(tests []verify.Test) []invocation {
	var top []verify.Test
	whole := map[string]bool{}
	for _, t := range tests {
		if !strings.Contains(t.Name, "/") {
			top = append(top, t)
			whole[t.Name] = true
		}
	}
	var out []invocation
	var topInv *invocation
	if len(top) > 0 {
		names := make([]string, len(top))
		for i, t := range top {
			names[i] = regexp.QuoteMeta(t.Name)
		}
		out = append(out, invocation{pattern: "^(" + strings.Join(names, "|") + ")$", tests: top})
		topInv = &out[0]
	}
	byParent := map[string][]verify.Test{}
	var parents []string
	for _, t := range tests {
		if !strings.Contains(t.Name, "/") {
			continue
		}
		first, _, _ := strings.Cut(t.Name, "/")
		if whole[first] {
			topInv.tests = append(topInv.tests, t)
			continue
		}
		parent := t.Name[:strings.LastIndex(t.Name, "/")]
		if _, ok := byParent[parent]; !ok {
			parents = append(parents, parent)
		}
		byParent[parent] = append(byParent[parent], t)
	}
	sort.Strings(parents)
	for _, parent := range parents {
		ts := byParent[parent]
		var levels []string
		for _, el := range strings.Split(parent, "/") {
			levels = append(levels, "^"+regexp.QuoteMeta(el)+"$")
		}
		var leaves []string
		for _, t := range ts {
			leaves = append(leaves, regexp.QuoteMeta(t.Name[strings.LastIndex(t.Name, "/")+1:]))
		}
		levels = append(levels, "^("+strings.Join(leaves, "|")+")$")
		out = append(out, invocation{pattern: strings.Join(levels, "/"), tests: ts})
	}
	return out
}

func (a *Adapter) testTimeout(opts verify.RunOptions) (flag string, cmd time.Duration) {
	if opts.Timeout <= 0 {
		return "10m", 0 // go test's own default; the runner adds no limit
	}
	return opts.Timeout.String(), opts.Timeout + buildDeadline()
}

// runPackage runs one package's tests until each has opts.Count results.
// With bin set, the compiled test binary runs instead of `go test`.
func (a *Adapter) runPackage(ctx context.Context, r sandbox.Runner, dir string, l layout, pkg string, tests []verify.Test, opts verify.RunOptions, bin string) ([]verify.TestResult, error) {
	pr := &packageRuns{pkg: pkg, tests: tests, opts: opts, got: map[string][]verify.TestResult{}, done: map[string]bool{}}
	// Each pass either yields at least one new result or ends the loop (a
	// test binary that stops early still yields the result of the test
	// that stopped it), so the loop ends after at most one pass per owed
	// result plus one.
	for pass := 0; pass <= opts.Count*len(tests); pass++ {
		pending := pr.owed()
		if len(pending) == 0 {
			break
		}
		progress := false
		for _, inv := range plan(pending) {
			count := 0
			for _, t := range inv.tests {
				count = max(count, opts.Count-len(pr.got[t.Name]))
			}
			var res sandbox.Result
			var stream *Stream
			var err error
			if bin != "" {
				res, stream, err = a.runBinary(ctx, r, dir, l, pkg, bin, inv.pattern, count, opts)
			} else {
				res, stream, err = a.goTest(ctx, r, dir, l, pkg, inv.pattern, count, opts)
			}
			if errors.Is(err, sandbox.ErrNotFound) {
				for _, t := range pending {
					pr.fill(t, verify.EnvError, fmt.Sprintf("%s not found: %s", a.goBin(), installHint))
				}
				return collect(tests, pr.got), nil
			}
			if err != nil {
				return collect(tests, pr.got), fmt.Errorf("go adapter: go test %s: %w", pkg, err)
			}
			if pr.add(inv, res, stream) {
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	pr.notRun()
	return collect(tests, pr.got), nil
}

// packageRuns are the results one package's tests have so far; each is
// owed opts.Count.
type packageRuns struct {
	pkg           string
	tests         []verify.Test
	opts          verify.RunOptions
	got           map[string][]verify.TestResult // by test name
	done          map[string]bool                // filled: owed nothing more
	binaryFailure string                         // output of a test binary that failed outside any test
}

// fill gives t the results it is still owed, all o.
func (pr *packageRuns) fill(t verify.Test, o verify.Outcome, detail string) {
	for len(pr.got[t.Name]) < pr.opts.Count {
		pr.got[t.Name] = append(pr.got[t.Name], verify.TestResult{Test: t, Outcome: o, Detail: detail})
	}
	pr.done[t.Name] = true
}

// owed are the tests still owed a result.
func (pr *packageRuns) owed() []verify.Test {
	var ts []verify.Test
	for _, t := range pr.tests {
		if !pr.done[t.Name] && len(pr.got[t.Name]) < pr.opts.Count {
			ts = append(ts, t)
		}
	}
	return ts
}

// add records what one invocation yielded for its tests, and reports
// whether any test got a result.
func (pr *packageRuns) add(inv invocation, res sandbox.Result, stream *Stream) bool {
	p := mainPackage(stream)
	if p != nil && p.BuildFailed() || p == nil && res.ExitCode != 0 && !res.TimedOut {
		o, detail := buildFailure(stream, p, res)
		for _, t := range inv.tests {
			pr.fill(t, o, detail)
		}
		return true
	}
	if p != nil && p.Action == "fail" && len(p.Tests) == 0 {
		pr.binaryFailure = filterOutput(p.Output)
	}
	progress := false
	for _, t := range inv.tests {
		for _, o := range outcomes(stream, t, p) {
			if len(pr.got[t.Name]) >= pr.opts.Count {
				break
			}
			pr.got[t.Name] = append(pr.got[t.Name], o)
			progress = true
			if o.Outcome == verify.Timeout {
				// Running it again would only spend the
				// timeout again.
				pr.fill(t, verify.Timeout, "not run again: an earlier run of this test timed out")
			}
		}
	}
	if res.TimedOut {
		for _, t := range inv.tests {
			if len(pr.got[t.Name]) < pr.opts.Count {
				pr.fill(t, verify.Timeout, fmt.Sprintf("go test %s was stopped after %s (test timeout %s plus time to build)", pr.pkg, res.Duration.Round(time.Second), pr.opts.Timeout))
			}
		}
	}
	return progress
}

// notRun fills every test still owed a result with NotRun, and says why.
func (pr *packageRuns) notRun() {
	for _, t := range pr.owed() {
		why := fmt.Sprintf("go test -run reported no result for %s in %s (no such test on this side?)", t.Name, pr.pkg)
		if pr.binaryFailure != "" {
			// TestMain or a package initializer failed: the test itself
			// never ran, so it neither failed nor passed.
			why = fmt.Sprintf("the test binary of %s failed before running %s:\n%s", pr.pkg, t.Name, pr.binaryFailure)
		}
		pr.fill(t, verify.NotRun, excerpt(why))
	}
}

func collect(tests []verify.Test, got map[string][]verify.TestResult) []verify.TestResult {
	var out []verify.TestResult
	for _, t := range tests {
		out = append(out, got[t.Name]...)
	}
	return out
}

// goTest runs one `go test -json` invocation and parses its stream.
// The package runs from the root of the module that holds it, so tests of
// nested modules run too.
func (a *Adapter) goTest(ctx context.Context, r sandbox.Runner, dir string, l layout, pkg, pattern string, count int, opts verify.RunOptions) (sandbox.Result, *Stream, error) {
	flag, limit := a.testTimeout(opts)
	root, rel, ok := inModule(l, pkg)
	if !ok {
		// No go.mod holds it: let the go command say why it cannot run.
		root, rel = ".", pkg
	}
	cwd, env, flags := a.goCommand(dir, l, root)
	mains, gr, gateEnv, err := packageGate(dir, pkg)
	if err != nil {
		return sandbox.Result{}, nil, err
	}
	defer gr.close()
	args := append([]string{a.goBin(), "test", "-json", "-vet=off"}, flags...)
	args = append(args, mains.flags()...)
	args = append(args, fmt.Sprintf("-count=%d", count), "-run", pattern, "-timeout", flag, rel)
	res, err := r.Run(ctx, sandbox.Command{Dir: cwd, Args: args, Env: append(env, gateEnv...), Timeout: limit})
	if err != nil {
		return res, nil, err
	}
	stream, err := ParseTestJSON(bytes.NewReader(res.Stdout))
	if err != nil {
		return res, nil, fmt.Errorf("reading go test output: %w", err)
	}
	judgeEnds(stream, mains, modulePaths(dir, l), gr.ends(), pattern)
	// Plain-text errors on stderr (older go commands, go command
	// failures) explain builds that produced no JSON.
	for _, l := range strings.Split(strings.TrimRight(string(res.Stderr), "\n"), "\n") {
		if l != "" {
			stream.Plain = append(stream.Plain, l)
		}
	}
	return res, stream, nil
}

// mainPackage is the package a single-package invocation reported on.
func mainPackage(s *Stream) *PackageRun {
	for _, p := range s.Packages {
		if p.Action != "" || len(p.Tests) > 0 {
			return p
		}
	}
	if len(s.Packages) > 0 {
		return s.Packages[0]
	}
	return nil
}

// buildFailure classifies an invocation whose test binary never ran: a
// compile or setup error is BuildError; a go command that cannot work in
// this environment (toolchain too old or not downloadable) is EnvError.
func buildFailure(s *Stream, p *PackageRun, res sandbox.Result) (verify.Outcome, string) {
	text := strings.TrimSpace(s.BuildErrorText(p))
	if text == "" {
		text = strings.TrimSpace(string(res.Stderr))
	}
	if text == "" && p != nil {
		text = strings.TrimSpace(p.Output)
	}
	if text == "" {
		text = fmt.Sprintf("go test exited with status %d and no output", res.ExitCode)
	}
	if isToolchainProblem(text) {
		return verify.EnvError, toolchainDetail(text)
	}
	return verify.BuildError, excerpt(text)
}

func isToolchainProblem(text string) bool {
	for _, s := range []string{"GOTOOLCHAIN", "requires go >=", "toolchain not available", "downloading go1", "go: cannot find GOROOT", "C compiler \""} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// outcomes turns the runs of t in the stream into results, in order.
func outcomes(s *Stream, t verify.Test, p *PackageRun) []verify.TestResult {
	timedOut := p != nil && p.TimedOut
	var out []verify.TestResult
	runs := s.Runs(t.Name)
	for _, run := range runs {
		out = append(out, runResult(t, run, timedOut))
	}
	if parent, ok := parentName(t.Name); ok {
		// A parent that failed or skipped before reaching the subtest
		// decides the subtest's outcome for that run.
		for _, pr := range s.Runs(parent) {
			if containsRun(runs, pr) {
				continue
			}
			switch {
			case pr.Action == "fail":
				r := runResult(t, pr, timedOut)
				r.Detail = excerpt(fmt.Sprintf("%s failed before running this subtest:\n%s", parent, filterOutput(pr.Output)))
				r.Duration = 0
				out = append(out, r)
			case pr.Action == "skip":
				out = append(out, verify.TestResult{Test: t, Outcome: verify.Skip, Detail: excerpt(parent + " skipped before running this subtest:\n" + filterOutput(pr.Output))})
			case pr.Action == "" && timedOut:
				out = append(out, verify.TestResult{Test: t, Outcome: verify.Timeout, Detail: excerpt(filterOutput(pr.Output))})
			}
		}
	}
	return out
}

func parentName(name string) (string, bool) {
	i := strings.LastIndex(name, "/")
	if i < 0 {
		return "", false
	}
	return name[:i], true
}

// containsRun reports whether one of runs happened inside parent's run.
func containsRun(runs []*TestRun, parent *TestRun) bool {
	for _, r := range runs {
		if r.Start >= parent.Start && r.Start <= parent.End {
			return true
		}
	}
	return false
}

func runResult(t verify.Test, run *TestRun, timedOut bool) verify.TestResult {
	r := verify.TestResult{Test: t, Duration: run.Elapsed}
	switch run.Verdict {
	case altered:
		r.Outcome, r.Detail = verify.Fail, excerpt(run.Why+"\n"+filterOutput(run.Output))
		return r
	case notTaken:
		r.Outcome, r.Detail = verify.NotRun, run.Why
		return r
	}
	switch run.Action {
	case "pass":
		r.Outcome = verify.Pass
	case "skip":
		r.Outcome = verify.Skip
		r.Detail = excerpt(filterOutput(run.Output))
	case "fail":
		r.Outcome = verify.Fail
		r.Detail = excerpt(filterOutput(run.Output))
		if strings.Contains(run.Output, timeoutMarker) {
			r.Outcome = verify.Timeout
		}
	default:
		if timedOut {
			r.Outcome = verify.Timeout
		} else {
			// The binary exited under the test (os.Exit, a fatal
			// runtime error): the code under test failed.
			r.Outcome = verify.Fail
		}
		d := filterOutput(run.Output)
		if d == "" {
			d = "the test binary exited while this test was running"
		}
		r.Detail = excerpt(d)
	}
	return r
}

// filterOutput drops go test's own progress lines, which say nothing about
// why a test failed.
func filterOutput(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== RUN") || strings.HasPrefix(t, "=== PAUSE") || strings.HasPrefix(t, "=== CONT") ||
			strings.HasPrefix(t, "=== NAME") || strings.HasPrefix(t, "--- PASS") {
			continue
		}
		keep = append(keep, strings.TrimRight(l, "\r"))
	}
	return strings.Join(keep, "\n")
}

// excerpt keeps the first detailLines lines of s.
func excerpt(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) <= detailLines {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:detailLines], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-detailLines)
}
