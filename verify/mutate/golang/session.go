package golang

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"math/bits"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// session is the Go half of one mutate.Run.
type session struct {
	ctx    context.Context
	runner sandbox.Runner
	root   string // the head snapshot, absolute
	change *verify.Change
	// opts are the run's: Finish sets their Tests.
	opts      *mutate.Options
	p         verify.Progress
	rep       *mutate.Report
	tmp       string
	files     []verify.FileChange // the changed Go files (mutate.Session.Files)
	goVersion string
	goToolDir string // the cover tool's directory; "" disables the one-process baseline
	// env holds the values of envVars once envDone is closed; envErr is
	// why they could not be read.
	env     []string
	envErr  error
	envDone chan struct{}
	// pkgs are the loaded packages and compile the build time, once
	// prepared.
	pkgs     []*pkg
	compile  time.Duration
	prepared bool
	// runnerID names the runner in cache keys, once computed.
	runnerID string
	mu       sync.Mutex
}

// prepare loads the packages, finds their mutants and builds: the schema
// binaries of packages whose baseline is cached, the baseline binaries of
// the others. It runs no test of the package (except for --reach, whose
// baselines pick the lines), so it can go on beside other runs in the
// same snapshot.
func (s *session) prepare() error {
	dirs, ranges := s.selectFiles()
	reachDirs := map[string][]string{}
	if s.opts.Reach {
		for _, t := range s.opts.Tests {
			if t.Language != "" && t.Language != "go" {
				continue
			}
			d := filepath.Join(s.root, filepath.FromSlash(path.Clean(t.Package)))
			reachDirs[d] = append(reachDirs[d], topLevel(t.Name))
			dirs[d] = true
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	// The toolchain's version, tool directory and settings, read beside
	// the load.
	s.envDone = make(chan struct{})
	go s.readEnv()
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		list = append(list, d)
	}
	sort.Strings(list)
	pkgs, err := s.load(list)
	<-s.envDone
	if s.envErr != nil {
		return s.envErr
	}
	if err != nil {
		return err
	}
	s.goVersion = s.goEnv("GOVERSION")
	s.goToolDir = s.goEnv("GOTOOLDIR")
	for i, p := range pkgs {
		p.num = i
		p.reach = reachDirs[p.list.Dir]
		for _, f := range p.files {
			if rs := ranges[f.rel]; len(rs) > 0 {
				p.ranges[f.rel] = rs
			}
		}
	}
	s.rep.Stats.Packages = len(pkgs)

	// Baselines: reach packages first, since their coverage picks lines.
	t0 := time.Now()
	for _, p := range pkgs {
		if len(p.reach) > 0 {
			if err := s.loadBaseline(p, false); err != nil {
				return err
			}
			p.addReachRanges()
		}
	}
	for _, p := range pkgs {
		s.mutantsOf(p)
	}
	for _, p := range pkgs {
		if p.base == nil && len(p.mutants) > 0 {
			if err := s.prepareBaseline(p, !s.opts.Overlay); err != nil {
				return err
			}
		}
	}
	s.rep.Stats.Baseline = time.Since(t0)
	if err := s.ctx.Err(); err != nil {
		return err
	}
	// Packages whose baseline is known build their schema now.
	t0 = time.Now()
	for _, p := range pkgs {
		if p.base != nil && p.pending == nil {
			s.schemaOf(p)
		}
	}
	s.compile = time.Since(t0)
	s.pkgs = pkgs
	s.prepared = true
	return nil
}

// schemaOf gives p's mutants their covering tests and builds p's schema.
func (s *session) schemaOf(p *pkg) {
	if p.assigned {
		return
	}
	p.assigned = true
	s.assignCoverage(p)
	if !s.opts.Overlay {
		s.buildSchema(p)
	}
}

// runMutants runs the pending baselines and every mutant, after prepare.
func (s *session) runMutants() error {
	if !s.prepared {
		return nil // no Go file to mutate
	}
	pkgs := s.pkgs
	t0 := time.Now()
	for _, p := range pkgs {
		if err := s.completeBaseline(p); err != nil {
			return err
		}
		if p.base != nil {
			s.rep.Quarantined = append(s.rep.Quarantined, p.base.Quarantined...)
		}
	}
	s.rep.Stats.Baseline += time.Since(t0)
	if err := s.ctx.Err(); err != nil {
		return err
	}

	// Schemata: one build per package.
	t0 = time.Now()
	var jobs []*mutant
	for _, p := range pkgs {
		s.schemaOf(p)
		for _, m := range p.mutants {
			if m.Verdict == "" {
				jobs = append(jobs, m)
			}
		}
	}
	compile := s.compile + time.Since(t0)

	// Mutant runs, in parallel across every package.
	t0 = time.Now()
	s.p.Step("running %d mutants on %d workers", len(jobs), s.opts.Workers)
	var buildTime time.Duration
	var done int
	mutate.Parallel(s.opts.Workers, len(jobs), func(i int) {
		m := jobs[i]
		if s.ctx.Err() != nil {
			m.Verdict, m.Detail = mutate.NoVerdict, "the run was cancelled before this mutant ran"
			return
		}
		bt := s.runMutant(m)
		s.mu.Lock()
		buildTime += bt
		done++
		if done%25 == 0 {
			s.p.Step("%d of %d mutants run", done, len(jobs))
		}
		s.mu.Unlock()
	})
	s.rep.Stats.Compile = compile + buildTime
	s.rep.Stats.Run = time.Since(t0)
	for _, p := range pkgs {
		for _, m := range p.mutants {
			s.rep.Mutants = append(s.rep.Mutants, m.Mutant)
			if _, ok := s.rep.Sources[m.File]; !ok {
				s.rep.Sources[m.File] = string(m.file.src)
			}
		}
		if len(p.mutants) > 0 {
			s.locateTests(p)
		}
	}
	return s.ctx.Err()
}

// readEnv reads envVars from `go env` into s.env and closes s.envDone.
func (s *session) readEnv() {
	defer close(s.envDone)
	res, err := s.goCmd(s.root, append([]string{"env"}, envVars...)...)
	if err != nil {
		s.envErr = err
		return
	}
	// One line per variable, empty ones included.
	s.env = strings.Split(string(res.Stdout), "\n")
	if len(s.env) > len(envVars) {
		s.env = s.env[:len(envVars)]
	}
	for i := range s.env {
		s.env[i] = strings.TrimSpace(s.env[i])
	}
}

// maxTestSource caps the test file source a report embeds.
const maxTestSource = 1 << 20

// locateTests records which test file of p declares each top-level test
// function, so reports name files instead of a package directory.
func (s *session) locateTests(p *pkg) {
	files := append(append([]string(nil), p.list.TestGoFiles...), p.list.XTestGoFiles...)
	fset := token.NewFileSet()
	for _, name := range files {
		// The host path: go list may have run in a container.
		abs := filepath.Join(s.root, filepath.FromSlash(p.relDir), name)
		src, err := mutate.ReadBeneath(s.root, abs, maxTestSource)
		if err != nil {
			continue
		}
		f, err := parser.ParseFile(fset, abs, src, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		rel := path.Join(p.relDir, name)
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				s.rep.TestFiles[p.relDir+":"+fd.Name.Name] = rel
			}
		}
		s.rep.Sources[rel] = string(src)
	}
}

// selectFiles returns the package directories (absolute) with changed
// non-test Go files, and the changed lines of each such file.
func (s *session) selectFiles() (map[string]bool, map[string][]verify.LineRange) {
	dirs := map[string]bool{}
	ranges := map[string][]verify.LineRange{}
	for _, f := range s.files {
		if skipDir(f.Path) {
			continue
		}
		ranges[f.Path] = f.Changed
		dirs[filepath.Join(s.root, filepath.FromSlash(path.Dir(f.Path)))] = true
	}
	return dirs, ranges
}

// skipDir reports paths the go command ignores (testdata, vendor, _ and .
// directories): they are not packages.
func skipDir(p string) bool {
	for _, part := range strings.Split(path.Dir(p), "/") {
		if part == "testdata" || part == "vendor" || strings.HasPrefix(part, "_") || (strings.HasPrefix(part, ".") && part != ".") {
			return true
		}
	}
	return false
}

func topLevel(name string) string {
	n, _, _ := strings.Cut(name, "/")
	return n
}

// addReachRanges adds, for --reach, every function the change's tests
// cover in the baseline.
func (p *pkg) addReachRanges() {
	want := map[string]bool{}
	for _, n := range p.reach {
		want[n] = true
	}
	for _, t := range p.base.Tests {
		if !want[t.Name] {
			continue
		}
		for _, f := range p.files {
			for _, d := range f.ast.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				from, to := p.fset.Position(fd.Pos()), p.fset.Position(fd.End())
				for _, b := range t.Blocks {
					if b.File == f.name && b.SL >= from.Line && b.EL <= to.Line {
						p.ranges[f.rel] = append(p.ranges[f.rel], verify.LineRange{Start: from.Line, End: to.Line})
						break
					}
				}
			}
		}
	}
}

// mutantsOf generates p's mutants on its selected lines, prunes them and
// applies suppressions.
func (s *session) mutantsOf(p *pkg) {
	clash := p.schemaClash()
	for _, f := range p.files {
		rs := p.ranges[f.rel]
		if len(rs) == 0 {
			continue
		}
		all := generate(p, f)
		byKey := map[string]*mutant{}
		for _, m := range all {
			byKey[keyOf(p.offset(m.wrap.Pos()), m.Operator)] = m
		}
		seen := map[string]bool{}
		for _, m := range all {
			if !inRanges(m.hot.Line, rs) || seen[m.ID] {
				continue
			}
			seen[m.ID] = true
			s.rep.Stats.Generated++
			if why := p.prune(m, byKey); why != "" {
				m.Verdict, m.Detail = mutate.Pruned, why
				s.rep.Pruned = append(s.rep.Pruned, m.Mutant)
				continue
			}
			if clash {
				m.schemaOK = false
			}
			if reason, ok := f.ignoreReason(m); ok {
				m.Verdict, m.IgnoreReason = mutate.Ignored, reason
			}
			p.mutants = append(p.mutants, m)
		}
	}
}

// assignCoverage gives each mutant the baseline tests that cover it, and
// marks mutants no test reaches.
func (s *session) assignCoverage(p *pkg) {
	if p.base == nil {
		return
	}
	for _, m := range p.mutants {
		if m.Verdict != "" {
			continue
		}
		var tests []string
		for _, t := range p.base.Tests {
			if covers(p, t, m) {
				tests = append(tests, t.Name)
			}
		}
		if len(tests) == 0 {
			m.Verdict = mutate.NotCovered
			m.Detail = "no test of the package reaches this line"
			continue
		}
		m.Tests = tests
	}
}

// covers reports whether t reaches m: a covered block contains the
// mutation, or, for code outside every block (conditions of else-if and
// switch cases can be), t covers a block of the enclosing function.
func covers(p *pkg, t baseTest, m *mutant) bool {
	inAny := false
	for _, b := range t.Blocks {
		if b.File == m.file.name && b.contains(m.hot.Line, m.hot.Column) {
			return true
		}
	}
	for _, b := range p.base.Blocks {
		if b.File == m.file.name && b.contains(m.hot.Line, m.hot.Column) {
			inAny = true
			break
		}
	}
	if inAny {
		return false
	}
	from, to := p.funcSpan(m)
	for _, b := range t.Blocks {
		if b.File == m.file.name && b.SL >= from && b.EL <= to {
			return true
		}
	}
	return false
}

func (p *pkg) funcSpan(m *mutant) (int, int) {
	for _, d := range m.file.ast.Decls {
		if d.Pos() <= m.wrap.Pos() && m.wrap.End() <= d.End() {
			return p.fset.Position(d.Pos()).Line, p.fset.Position(d.End()).Line
		}
	}
	return m.Line, m.EndLine
}

// buildSchema compiles p's test binary once with every schema mutant in it.
// When it does not build, its mutants fall back to one build each.
func (s *session) buildSchema(p *pkg) {
	if p.schemaTried {
		return
	}
	n := 0
	for _, m := range p.mutants {
		if m.Verdict == "" && m.schemaOK {
			n++
		}
	}
	if n == 0 {
		return
	}
	s.p.Step("building the schema of %s with %d mutants", p.relDir, n)
	files := p.schemaFiles()
	if files == nil {
		return
	}
	fallback := func(why string) {
		for _, m := range p.mutants {
			m.schemaOK = false
		}
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("schema of %s: %s; its mutants use the slower per-mutant build", p.relDir, why))
	}
	ov, err := p.writeOverlay(filepath.Join(s.tmp, "schema"), fmt.Sprintf("pkg%d", p.num), files)
	if err != nil {
		fallback(err.Error())
		return
	}
	key, _ := s.schemaKey(p, files)
	// The binary carries the generated TestMain (without counters) where
	// the package can take it, so its mutant runs order their tests as the
	// one-process baseline's binary does.
	withMain := s.canCoverInProcess(p) && !p.mainFailed
	if bin := s.cachedSchema(p, key); bin != "" {
		s.rep.Stats.SchemaCached++
		p.schemaBin, p.ordered = bin, withMain
		return
	}
	if withMain {
		withTestMain := maps.Clone(files)
		withTestMain[coverMainFile] = coverMain(p.types.Name(), 0)
		mov, err := p.writeOverlay(filepath.Join(s.tmp, "schema"), fmt.Sprintf("pkg%d-main", p.num), withTestMain)
		if err == nil {
			ov = mov
		} else {
			withMain = false
		}
	}
	bin := filepath.Join(s.tmp, fmt.Sprintf("pkg%d.schema.test", p.num))
	res, err := s.testBuild(p.list.Dir, bin, "-overlay", ov)
	if err == nil && res.ExitCode != 0 && withMain {
		// Should the TestMain be what does not build, the schema alone is
		// still one build for every mutant.
		withMain = false
		ov, err = p.writeOverlay(filepath.Join(s.tmp, "schema"), fmt.Sprintf("pkg%d", p.num), files)
		if err == nil {
			res, err = s.testBuild(p.list.Dir, bin, "-overlay", ov)
		}
	}
	if err != nil {
		fallback(err.Error())
		return
	}
	if res.ExitCode != 0 {
		fallback("does not build: " + firstLines(string(res.Stderr), 4))
		return
	}
	p.schemaBin, p.ordered = bin, withMain
	if withMain == (s.canCoverInProcess(p) && !p.mainFailed) {
		// A package that takes the TestMain keeps only binaries with it
		// (as the baseline's is), so a cached one orders its tests too.
		s.storeSchema(p, key, bin)
	}
}

// runOrder is the order a mutant run runs its covering tests in: by how
// long each took in the baseline, in doubling classes from 10ms up (every
// test under 10ms is in the first), and in source order within a class.
// With -test.failfast a kill then comes from the cheap tests before the
// slow ones run (a slow table or fuzz-like test first in the file no
// longer runs for every killed mutant); a survivor runs all of them, in
// one process, under the same budget, as before. runOrdered keeps the
// verdict and the killing test of a run in source order. Runs with the
// change's own tests named (no -test.failfast) keep source order.
func (s *session) runOrder(p *pkg, tests []string) []string {
	want := map[string]bool{}
	for _, t := range tests {
		want[t] = true
	}
	var order []baseTest
	for _, t := range p.base.Tests {
		if want[t.Name] {
			order = append(order, t)
		}
	}
	class := func(d time.Duration) int { return bits.Len64(uint64(d / (10 * time.Millisecond))) }
	sort.SliceStable(order, func(i, j int) bool { return class(order[i].Duration) < class(order[j].Duration) })
	names := make([]string, len(order))
	for i, t := range order {
		names[i] = t.Name
	}
	return names
}

// runBudget is what one mutant run may spend. cpu is its budget, in CPU
// time, which the kernel enforces (sandbox.Command.CPULimit): ten times
// what its tests took alone on the baseline, plus two seconds for process
// start. CPU time is the work done, not the time spent waiting for a core,
// so a busy machine does not turn a slow kill into a timeout. wall only
// ends a run that waits instead of working (a mutant that blocks forever
// on a timer or a channel): five times cpu plus 30 s for a container's
// start, far past what a run that works would need on a machine fifty
// times busier. Neither depends on what the build cache held.
func (s *session) runBudget(p *pkg, tests []string) (cpu, wall time.Duration) {
	want := map[string]bool{}
	for _, t := range tests {
		want[t] = true
	}
	var sum time.Duration
	for _, t := range p.base.Tests {
		if want[t.Name] {
			sum += t.Duration
		}
	}
	return mutantBudget(sum, s.opts.RunTimeout)
}

// mutantBudget is runBudget for tests that took base on the baseline.
// limit, when set, is the user's run_timeout: it caps both, so it is a
// wall-clock cap a busy machine can reach first (the default budget alone
// does not change with load).
func mutantBudget(base, limit time.Duration) (cpu, wall time.Duration) {
	return mutate.Budget(10*base+2*time.Second, limit)
}

var failLine = regexp.MustCompile(`(?m)^--- FAIL: (\S+) \(`)
var runLine = regexp.MustCompile(`(?m)^=== RUN   (\S+)$`)

// runtimeFailure is the Go runtime's own report of code gone wrong: an
// unrecovered panic, or a fatal error (stack overflow, deadlock, concurrent
// map writes). The code under test did it, so the test running it noticed
// the mutant, though no failure line was printed.
var runtimeFailure = regexp.MustCompile(`(?m)^(panic: |fatal error: )`)

// runMutant runs m's covering tests with m active and sets its verdict.
// It returns the time spent building (overlay fallback only).
func (s *session) runMutant(m *mutant) time.Duration {
	p := m.pkg
	start := time.Now()
	var build time.Duration
	bin := p.schemaBin
	var env []string
	if m.schemaOK && bin != "" {
		m.Schema = true
		env = []string{envVar + "=" + m.ID}
	} else {
		var err error
		bin, err = s.buildOverlay(m)
		build = time.Since(start)
		if err != nil {
			m.Duration = time.Since(start)
			return build
		}
	}
	// With the change's own tests named, every covering test runs, so a
	// kill by one of them is seen even when another test failed first.
	preferred := s.preferredKillers()
	cpu, wall := s.runBudget(p, m.Tests)
	run := func(tests []string, order []string) (sandbox.Result, error) {
		pattern := make([]string, len(tests))
		for i, t := range tests {
			pattern[i] = regexp.QuoteMeta(t)
		}
		args := []string{bin, "-test.run", "^(" + strings.Join(pattern, "|") + ")$", "-test.count=1", "-test.v"}
		if len(preferred) == 0 {
			args = append(args, "-test.failfast")
		}
		e := env
		if len(order) > 0 {
			e = append(append([]string(nil), env...), orderEnv+"="+strings.Join(order, ","))
		}
		return s.runner.Run(s.ctx, sandbox.Command{Dir: p.list.Dir, Args: args, Env: e, CPULimit: cpu, Timeout: wall, OutputLimit: 1 << 20})
	}
	var res sandbox.Result
	var err error
	if m.Schema && p.ordered && len(m.Tests) > 1 && len(preferred) == 0 {
		res, err = s.runOrdered(m, run)
	} else {
		res, err = run(m.Tests, nil)
	}
	m.Duration = time.Since(start)
	switch {
	case err != nil && s.ctx.Err() != nil:
		m.Verdict, m.Detail = mutate.NoVerdict, "the run was cancelled"
	case err != nil:
		m.Verdict, m.Detail = mutate.NoVerdict, "the runner failed: "+err.Error()
	case res.CPULimited:
		m.Verdict = mutate.Timeout
		m.Detail = fmt.Sprintf("the covering tests used %ds of CPU time without finishing (10x their baseline time + 2s)", sandbox.CPULimitSeconds(cpu))
	case res.TimedOut:
		m.Verdict = mutate.Timeout
		m.Detail = fmt.Sprintf("the covering tests waited %s without finishing (they were blocked, not working: the CPU budget is %ds)", wall.Round(time.Millisecond), sandbox.CPULimitSeconds(cpu))
	case res.ExitCode == 0:
		m.Verdict = mutate.Survived
	default:
		judgeFailure(m, res, preferred)
	}
	if m.Verdict == mutate.Killed && m.KilledBy == "" {
		m.KilledBy = strings.Join(m.Tests, ",")
	}
	return build
}

// runOrdered runs m's covering tests cheapest first (runOrder). A run
// that ends in a failing test kills the mutant, as it would in any order
// (the test named may be a cheaper one than the first in the file). A run
// that ends without a verdict of a test's own (out of budget, blocked, the
// binary gone without a failure) is not left to the order: the tests
// before the one it stopped in, in source order, that it had not run yet
// run next, in source order, as a run in source order would have run them
// first. If one of them fails or hangs, theirs is the result (a mutant a
// test in the file kills before another hangs is killed, as it always
// was); if they pass, the ordered run's result stands.
func (s *session) runOrdered(m *mutant, run func(tests, order []string) (sandbox.Result, error)) (sandbox.Result, error) {
	res, err := run(m.Tests, s.runOrder(m.pkg, m.Tests))
	if err != nil || !noTestVerdict(res) {
		return res, err
	}
	before := notRunBefore(m.Tests, string(res.Stdout))
	if len(before) == 0 {
		return res, nil
	}
	res2, err := run(before, nil)
	if err != nil || res2.ExitCode != 0 || res2.CPULimited || res2.TimedOut {
		return res2, err
	}
	return res, nil
}

// noTestVerdict reports a run that ended without a test deciding: out of
// budget, blocked, or the binary gone without a failure line or a runtime
// failure to pin on a test (judgeFailure's no verdict).
func noTestVerdict(res sandbox.Result) bool {
	if res.CPULimited || res.TimedOut {
		return true
	}
	if res.ExitCode == 0 {
		return false
	}
	out := string(res.Stdout)
	return !failLine.MatchString(out) && !runtimeFailure.MatchString(out+string(res.Stderr))
}

var passLine = regexp.MustCompile(`(?m)^--- (?:PASS|SKIP): (\S+) \(`)

// notRunBefore returns the tests (in source order) that come before the
// last top-level test out started and did not pass in out: the ones a
// source-order run would have run before it.
func notRunBefore(tests []string, out string) []string {
	last := ""
	for _, g := range runLine.FindAllStringSubmatch(out, -1) {
		if !strings.Contains(g[1], "/") {
			last = g[1]
		}
	}
	passed := map[string]bool{}
	for _, g := range passLine.FindAllStringSubmatch(out, -1) {
		passed[g[1]] = true
	}
	var before []string
	for _, t := range tests {
		if t == last {
			return before
		}
		if !passed[t] {
			before = append(before, t)
		}
	}
	return nil // the last test started is not one of them: nothing to add
}

// judgeFailure gives m, whose covering tests exited non-zero, its verdict:
// killed by the first test that failed (one of preferred, if one did), or
// by the test running when the runtime reported a panic or fatal error; no
// verdict when the binary died inside a test without either (a signal from
// outside, an exit: a crash is not a test noticing the mutant).
func judgeFailure(m *mutant, res sandbox.Result, preferred map[string]bool) {
	out := string(res.Stdout)
	excerpt := failureExcerpt(out + string(res.Stderr))
	if all := failLine.FindAllStringSubmatch(out, -1); len(all) > 0 {
		m.Verdict, m.KilledBy, m.Detail = mutate.Killed, all[0][1], excerpt
		for _, g := range all {
			if preferred[g[1]] {
				m.KilledBy = g[1]
				break
			}
		}
		return
	}
	if all := runLine.FindAllStringSubmatch(out, -1); len(all) > 0 {
		if runtimeFailure.MatchString(out + string(res.Stderr)) {
			m.Verdict, m.KilledBy, m.Detail = mutate.Killed, topLevel(all[len(all)-1][1]), excerpt
			return
		}
		m.Verdict = mutate.NoVerdict
		m.Detail = "the test binary died during " + topLevel(all[len(all)-1][1]) + " without a test reporting a failure"
		if excerpt != "" {
			m.Detail += ": " + excerpt
		}
		return
	}
	m.Verdict, m.Detail = mutate.Killed, excerpt
}

// preferredKillers are the top-level names of Options.Tests.
func (s *session) preferredKillers() map[string]bool {
	if len(s.opts.Tests) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, t := range s.opts.Tests {
		m[topLevel(t.Name)] = true
	}
	return m
}

// buildOverlay builds a test binary with only m applied. A build failure
// makes m unviable (never killed).
func (s *session) buildOverlay(m *mutant) (string, error) {
	p := m.pkg
	src := make([]byte, 0, len(m.file.src)+len(m.repl))
	src = append(append(append(src, m.file.src[:m.start]...), m.repl...), m.file.src[m.end:]...)
	ov, err := p.writeOverlay(filepath.Join(s.tmp, "overlay"), m.ID, map[string][]byte{m.file.name: src})
	if err != nil {
		m.Verdict, m.Detail = mutate.NoVerdict, "writing the overlay: "+err.Error()
		return "", err
	}
	bin := filepath.Join(s.tmp, "overlay", m.ID+".test")
	res, err := s.testBuild(p.list.Dir, bin, "-overlay", ov)
	if err != nil {
		if s.ctx.Err() != nil {
			m.Verdict, m.Detail = mutate.NoVerdict, "the run was cancelled"
		} else {
			m.Verdict, m.Detail = mutate.Unviable, err.Error()
		}
		return "", err
	}
	if res.ExitCode != 0 {
		m.Verdict, m.Detail = mutate.Unviable, "does not build: "+firstLines(string(res.Stderr), 3)
		return "", errors.New("unviable")
	}
	return bin, nil
}

// failureExcerpt keeps the first lines that say why the tests failed.
func failureExcerpt(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- PASS") || t == "FAIL" || t == "PASS" {
			continue
		}
		keep = append(keep, t)
		if len(keep) == 3 {
			break
		}
	}
	return strings.Join(keep, " | ")
}
