package golang

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// The one-process baseline. Running every test in a process of its own
// costs a process start, the package's init and TestMain's setup per test,
// and a second build (the coverage binary) beside the schema's. Instead the
// package's files go through the cover tool (set-mode counters in plain
// package variables: atomic ones slow tight loops thirtyfold) on top of the schema, and a generated TestMain runs
// each test through its own m.Run in ONE process, reading and clearing the
// counters between tests. The same binary then runs the mutants: with
// BCODE_COVER_OUT unset, the TestMain is os.Exit(m.Run()).
//
// Packages that declare their own TestMain keep the per-process baseline:
// there is only one TestMain per test binary.

const (
	coverVarPrefix = schemaPrefix + "Cover"
	coverOutEnv    = "BCODE_COVER_OUT"
	coverFromEnv   = "BCODE_COVER_FROM"
	coverMainFile  = "bcode_mutant_cover_test.go"
	// orderEnv lists the tests a mutant run runs, comma-separated, in the
	// order to run them (see runOrder).
	orderEnv = "BCODE_TEST_ORDER"
)

// coverFile is one file compiled with counters.
type coverFile struct {
	name string // base name
	src  []byte // the original source, for positions
	segs []segment
}

// canCoverInProcess reports whether p's tests can take the generated
// TestMain: none of its test files declares one or uses the file name.
func (s *session) canCoverInProcess(p *pkg) bool {
	if s.goToolDir == "" || s.opts.PerProcessBaseline {
		return false
	}
	fset := token.NewFileSet()
	for _, name := range append(append([]string(nil), p.list.TestGoFiles...), p.list.XTestGoFiles...) {
		if name == coverMainFile {
			return false
		}
		src, err := mutate.ReadBeneath(s.root, filepath.Join(p.list.Dir, name), maxTestSource)
		if err != nil {
			return false
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return false
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" {
				return false
			}
		}
	}
	return true
}

// coverOverlay returns the overlay for a test binary with per-test
// coverage: every Go file of p (its schema rewrite where schema has one)
// through the cover tool, the schema's helper file, and the TestMain.
func (s *session) coverOverlay(p *pkg, schema map[string][]byte, sel []int) (map[string][]byte, []coverFile, error) {
	dir := filepath.Join(s.tmp, "cover", fmt.Sprintf("pkg%d", p.num))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	out := map[string][]byte{}
	for name, content := range schema {
		out[name] = content // files with counters replace theirs below
	}
	files := make([]coverFile, len(sel))
	errs := make([]error, len(sel))
	mutate.Parallel(s.opts.Workers, len(sel), func(i int) {
		f := p.files[sel[i]]
		content := f.src
		if sc, ok := schema[f.name]; ok {
			content = sc
		}
		files[i] = coverFile{name: f.name, src: f.src, segs: p.schemaSegs[f.name]}
		if schema[f.name] == nil {
			files[i].segs = nil
		}
		sub := filepath.Join(dir, strconv.Itoa(i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			errs[i] = err
			return
		}
		in, outFile := filepath.Join(sub, f.name), filepath.Join(sub, "cover-"+f.name)
		if err := os.WriteFile(in, content, 0o644); err != nil {
			errs[i] = err
			return
		}
		res, err := s.runner.Run(s.ctx, sandbox.Command{
			Dir:     sub,
			Args:    []string{filepath.Join(s.goToolDir, "cover"), "-mode=set", "-var=" + coverVarPrefix + strconv.Itoa(i), "-o", outFile, in},
			Timeout: s.opts.CompileTimeout,
		})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("cover %s: %s", f.name, firstLines(string(res.Stderr), 3))
		}
		if err != nil {
			errs[i] = err
			return
		}
		data, err := sandbox.ReadPath(outFile, maxCoverOut)
		if err != nil {
			errs[i] = err
			return
		}
		// The cover tool names its input in a //line directive; name the
		// package's own file, so tests and stack traces see the usual path.
		if first, rest, ok := bytes.Cut(data, []byte("\n")); ok && bytes.HasPrefix(first, []byte("//line ")) {
			data = append([]byte(fmt.Sprintf("//line %s:1:1\n", f.abs)), rest...)
		}
		errs[i] = nil
		s.mu.Lock()
		out[f.name] = data
		s.mu.Unlock()
	})
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	out[coverMainFile] = coverMain(p.types.Name(), len(sel))
	return out, files, nil
}

// coverSet is the indices of p's files that get counters: those with
// mutants (a block elsewhere decides nothing), or every file for --reach,
// whose lines come from what the change's tests cover anywhere.
func (p *pkg) coverSet() []int {
	has := map[*srcFile]bool{}
	for _, m := range p.mutants {
		has[m.file] = true
	}
	var sel []int
	for i, f := range p.files {
		if len(p.reach) > 0 || len(has) == 0 || has[f] {
			sel = append(sel, i)
		}
	}
	return sel
}

// coverMainBody is coverMain's TestMain and the per-test loop, a format
// whose verbs name the file-scoped imports (see coverMain's call).
const coverMainBody = `func TestMain(m *%[2]s.M) {
	out := %[3]s.Getenv(%[4]q)
	if out == "" {
		if order := %[3]s.Getenv(%[14]q); order != "" {
			%[3]s.Exit(%[1]sTestsInOrder(m, %[7]s.Split(order, ",")))
		}
		%[3]s.Exit(m.Run())
	}
	%[3]s.Exit(%[1]sCoverTests(m, out))
}

func %[1]sTestsInOrder(m *%[2]s.M, names []string) int {
	// The command line first, so its -test.run does not replace ours.
	if !%[6]s.Parsed() {
		%[6]s.Parse()
	}
	failfast := false
	if f := %[6]s.Lookup("test.failfast"); f != nil {
		failfast = f.Value.String() == "true"
	}
	code := 0
	for _, n := range names {
		%[6]s.Set("test.run", "^"+%[12]s.QuoteMeta(n)+"$")
		if c := m.Run(); c != 0 {
			code = c
			if failfast {
				break
			}
		}
	}
	return code
}

func %[1]sCoverTests(m *%[2]s.M, out string) int {
	f, err := %[3]s.OpenFile(out, %[3]s.O_WRONLY|%[3]s.O_APPEND|%[3]s.O_CREATE, 0644)
	if err != nil {
		return 3
	}
	w := %[5]s.NewWriter(f)
	// Written to the OS after every test (no fsync: the file only has to
	// outlive a crash of this process, not of the machine).
	flush := func() { w.Flush() }
	ctrs := %[1]sCounters()
	// Blocks package initialization ran count for every test, as they do
	// when each test runs in a process of its own.
	w.WriteString("init")
	for fi, c := range ctrs {
		for j := range c.c {
			if %[11]s.LoadUint32(&c.c[j]) != 0 {
				%[10]s.Fprintf(w, " %%d.%%d", fi, j)
			}
		}
	}
	w.WriteString("\n")
	// The test list, through the binary's own -test.list: the tests the
	// command line's -test.run names, or every test.
	if !%[6]s.Parsed() {
		%[6]s.Parse()
	}
	pattern := "."
	if f := %[6]s.Lookup("test.run"); f != nil && f.Value.String() != "" {
		pattern = f.Value.String()
	}
	lf, err := %[3]s.Create(out + ".list")
	if err != nil {
		return 3
	}
	defer %[3]s.Remove(lf.Name())
	stdout := %[3]s.Stdout
	%[3]s.Stdout = lf
	%[6]s.Set("test.list", pattern)
	m.Run()
	%[6]s.Set("test.list", "")
	%[3]s.Stdout = stdout
	lf.Close()
	listed, err := %[3]s.ReadFile(lf.Name())
	if err != nil {
		return 3
	}
	var names []string
	for _, n := range %[7]s.Fields(string(listed)) {
		if %[7]s.HasPrefix(n, "Test") || %[7]s.HasPrefix(n, "Example") || %[7]s.HasPrefix(n, "Fuzz") {
			names = append(names, n)
		}
	}
	from, _ := %[8]s.Atoi(%[3]s.Getenv(%[9]q))
	if from == 0 {
		for fi, c := range ctrs {
			for bi := 0; 3*bi+2 < len(c.p); bi++ {
				%[10]s.Fprintf(w, "pos %%d %%d %%d %%d %%d\n", fi, bi, c.p[3*bi], c.p[3*bi+1], c.p[3*bi+2])
			}
		}
	}
	for i := from; i < len(names); i++ {
		for _, c := range ctrs {
			for j := range c.c {
				%[11]s.StoreUint32(&c.c[j], 0)
			}
		}
		%[10]s.Fprintf(w, "run %%d %%s\n", i, names[i])
		flush()
		%[6]s.Set("test.run", "^"+%[12]s.QuoteMeta(names[i])+"$")
		start := %[13]s.Now()
		code := m.Run()
		d := %[13]s.Since(start)
		%[10]s.Fprintf(w, "done %%d %%d %%d", i, code, d.Nanoseconds())
		for fi, c := range ctrs {
			for j := range c.c {
				if %[11]s.LoadUint32(&c.c[j]) != 0 {
					%[10]s.Fprintf(w, " %%d.%%d", fi, j)
				}
			}
		}
		w.WriteString("\n")
		flush()
	}
	w.WriteString("end\n")
	flush()
	f.Close()
	return 0
}
`

// coverMain is the generated TestMain. With BCODE_COVER_OUT set it lists
// the tests (those the command line's -test.run matches, if it has one:
// a body edit's baseline runs only the tests that reached it), then runs each alone through m.Run with the counters cleared
// before and read after, appending to that file:
//
//	init F.B ...                blocks package initialization covered
//	pos FILE BLOCK SL EL COLS   every block of every file, once
//	run I NAME                  before test I
//	done I CODE NANOS F.B ...   after it: exit code, time, covered blocks
//	end                         after the last test
//
// BCODE_COVER_FROM skips the tests before it (a restart after a crash).
// Without BCODE_COVER_OUT, BCODE_TEST_ORDER runs the tests it names in its
// order, each through its own m.Run (as the baseline ran them), stopping at
// the first failure under -test.failfast; without either it is m.Run().
// nfiles 0 makes the TestMain of a schema binary without counters.
//
// It compiles at every language version a go.mod can name (a module that
// says go 1.12 rejects 0o literals): no newer syntax in it.
func coverMain(pkgName string, nfiles int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "// Code generated by bcode mutation evidence. DO NOT EDIT.\n\npackage %s\n\n", pkgName)
	imports := []string{"bufio", "flag", "fmt", "os", "regexp", "strconv", "strings", "sync/atomic", "testing", "time"}
	imp := func(path string) string {
		// File-scoped names that cannot clash with the package's (the
		// schema already refuses packages with bcodeMutant names).
		return schemaPrefix + "Imp_" + strings.ReplaceAll(path, "/", "_")
	}
	for _, path := range imports {
		fmt.Fprintf(&b, "import %s %q\n", imp(path), path)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "func %sCounters() []struct{ c []uint32; p []uint32 } {\n\treturn []struct{ c []uint32; p []uint32 }{\n", schemaPrefix)
	for i := 0; i < nfiles; i++ {
		fmt.Fprintf(&b, "\t\t{%[1]s%[2]d.Count[:], %[1]s%[2]d.Pos[:]},\n", coverVarPrefix, i)
	}
	b.WriteString("\t}\n}\n\n")
	fmt.Fprintf(&b, coverMainBody, schemaPrefix, imp("testing"), imp("os"), coverOutEnv, imp("bufio"), imp("flag"), imp("strings"), imp("strconv"), coverFromEnv, imp("fmt"), imp("sync/atomic"), imp("regexp"), imp("time"), orderEnv)
	return []byte(b.String())
}

// keepsLines reports whether every rewritten node of the schema is on one
// line in both files, so block positions map back line by line.
func keepsLines(p *pkg, schema map[string][]byte) bool {
	for _, f := range p.files {
		sc, ok := schema[f.name]
		if !ok {
			continue
		}
		for _, sg := range p.schemaSegs[f.name] {
			if bytes.IndexByte(f.src[sg.origStart:sg.origEnd], '\n') >= 0 || bytes.IndexByte(sc[sg.newStart:sg.newEnd], '\n') >= 0 {
				return false
			}
		}
	}
	return true
}

// coverResult is one test's run in the one-process baseline.
type coverResult struct {
	name     string
	passed   bool
	duration time.Duration
	blocks   []block
}

// coverRecord is what the processes of one coverage baseline wrote, read
// record by record (see coverMain for their format).
type coverRecord struct {
	files      []coverFile
	pos        map[[2]int]block
	results    []coverResult
	initBlocks [][2]int
	running    int // the test started and not done, or -1
	ended      bool
}

// read applies one process's records: running is then the test that was
// running when they stop (-1: none), and ended whether the last was done.
func (cr *coverRecord) read(data []byte) {
	cr.running, cr.ended = -1, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			cr.record(f)
		}
	}
}

// record applies one record, f its fields.
func (cr *coverRecord) record(f []string) {
	switch f[0] {
	case "init":
		for _, fb := range f[1:] {
			a, b, _ := strings.Cut(fb, ".")
			cr.initBlocks = append(cr.initBlocks, [2]int{atoi(a), atoi(b)})
		}
	case "pos":
		if len(f) != 6 {
			return
		}
		n := atois(f[1:])
		if n[0] < 0 || n[0] >= len(cr.files) {
			return
		}
		cr.pos[[2]int{n[0], n[1]}] = cr.files[n[0]].block(n[2], n[3], n[4])
	case "run":
		if len(f) != 3 {
			return
		}
		cr.running = atoi(f[1])
		for len(cr.results) <= cr.running {
			cr.results = append(cr.results, coverResult{})
		}
		cr.results[cr.running].name = f[2]
	case "done":
		if len(f) < 4 {
			return
		}
		if n := atois(f[1:4]); n[0] == cr.running {
			cr.done(n[1], n[2], f[4:])
		}
	case "end":
		cr.ended = true
	}
}

// done ends the running test with its exit code, time and covered blocks
// (package initialization's among them).
func (cr *coverRecord) done(code, nanos int, covered []string) {
	r := &cr.results[cr.running]
	r.passed, r.duration = code == 0, time.Duration(nanos)
	seen := map[[2]int]bool{}
	add := func(k [2]int) {
		if bl, ok := cr.pos[k]; ok && !seen[k] {
			seen[k] = true
			r.blocks = append(r.blocks, bl)
		}
	}
	for _, k := range cr.initBlocks {
		add(k)
	}
	for _, fb := range covered {
		a, b, _ := strings.Cut(fb, ".")
		add([2]int{atoi(a), atoi(b)})
	}
	cr.running = -1
}

// blocks is every block, in file and block order.
func (cr *coverRecord) blocks() []block {
	var all []block
	keys := make([][2]int, 0, len(cr.pos))
	for k := range cr.pos {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		all = append(all, cr.pos[k])
	}
	return all
}

// runCoverProcess runs every test of bin in one process (restarting after
// the test a crash or timeout stopped) and returns each test's result and
// every block.
func (s *session) runCoverProcess(p *pkg, bin string, files []coverFile, run string) ([]coverResult, []block, error) {
	out := filepath.Join(s.tmp, fmt.Sprintf("pkg%d.coverrun", p.num))
	cr := &coverRecord{files: files, pos: map[[2]int]block{}}
	from := 0
	for {
		res, err := mutate.RunBaseline(s.ctx, s.runner, "the coverage baseline of "+p.relDir, sandbox.Command{
			Dir:         p.list.Dir,
			Args:        append([]string{bin, "-test.count=1"}, runArgs(run)...),
			Env:         []string{coverOutEnv + "=" + out, coverFromEnv + "=" + strconv.Itoa(from)},
			OutputLimit: 64 << 10,
		}, 0)
		if err != nil {
			return nil, nil, err
		}
		// The tests of the agent's change ran in this process and could
		// have replaced out (with a link to /dev/zero, a fifo): a refusal
		// ends the baseline, and the gate reports it.
		data, err := sandbox.ReadPath(out, maxCoverRun)
		_ = os.Remove(out)
		if _, refused := sandbox.Refused(err); refused {
			return nil, nil, err
		}
		cr.read(data)
		if cr.ended {
			break
		}
		if cr.running < 0 {
			// Nothing started: the binary failed before its first test.
			if len(cr.results) == 0 && from == 0 && res.ExitCode != 0 {
				return nil, nil, &mutate.BaselineError{Package: p.relDir, Detail: "its test binary failed before any test ran:\n" + firstLines(string(res.Stdout)+string(res.Stderr), 8)}
			}
			break
		}
		// The test that was running crashed the process or hung: it failed
		// alone; the rest continue in a fresh process.
		cr.results[cr.running].passed = false
		cr.results[cr.running].duration = res.Duration
		from = cr.running + 1
	}
	return cr.results, cr.blocks(), nil
}

// block turns a cover tool position (in the compiled file, which is the
// schema rewrite for files with schema mutants) into a block of the
// original file. Positions inside a rewritten node map to its ends.
func (f coverFile) block(sl, el, cols int) block {
	sc, ec := cols&0xffff, (cols>>16)&0xffff
	if len(f.segs) == 0 {
		return block{File: f.name, SL: sl, SC: sc, EL: el, EC: ec}
	}
	// Lines are the same in both files; columns shift on lines with
	// rewritten nodes. Work in byte offsets of the compiled file.
	compiled := f.compiledLineStarts()
	toOrig := func(line, col int, end bool) (int, int) {
		if line < 1 || line > len(compiled) {
			return line, col
		}
		off := compiled[line-1] + col - 1
		shift := 0
		for _, sg := range f.segs {
			if off < sg.newStart {
				break
			}
			if off < sg.newEnd || (end && off == sg.newEnd) {
				o := sg.origStart
				if end {
					o = sg.origEnd
				}
				return f.lineCol(o)
			}
			shift = sg.newEnd - sg.origEnd
		}
		return f.lineCol(off - shift)
	}
	b := block{File: f.name}
	b.SL, b.SC = toOrig(sl, sc, false)
	b.EL, b.EC = toOrig(el, ec, true)
	return b
}

// compiledLineStarts returns the offsets at which the compiled (schema)
// file's lines start: the original's, shifted by the rewrites before them.
func (f coverFile) compiledLineStarts() []int {
	starts := []int{0}
	shift, k := 0, 0
	for i, c := range f.src {
		if c != '\n' {
			continue
		}
		for k < len(f.segs) && f.segs[k].origEnd <= i {
			shift = f.segs[k].newEnd - f.segs[k].origEnd
			k++
		}
		starts = append(starts, i+1+shift)
	}
	return starts
}

// lineCol is the 1-based line and byte column of offset off in the
// original file.
func (f coverFile) lineCol(off int) (int, int) {
	if off > len(f.src) {
		off = len(f.src)
	}
	line, col := 1, 1
	if i := bytes.LastIndexByte(f.src[:off], '\n'); i >= 0 {
		line = bytes.Count(f.src[:off], []byte("\n")) + 1
		col = off - i
	} else {
		col = off + 1
	}
	return line, col
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func atois(ss []string) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = atoi(s)
	}
	return out
}

// buildCoverBinary builds p's test binary for the one-process baseline:
// the schema, when schema has files, with counters, and the generated
// TestMain. A build that fails is an errCoverBuild.
func (s *session) buildCoverBinary(p *pkg, schema map[string][]byte, sel []int) (string, []coverFile, error) {
	s.p.Step("baseline of %s: building tests with per-test coverage", p.relDir)
	overlay, files, err := s.coverOverlay(p, schema, sel)
	if err != nil {
		return "", nil, err
	}
	ov, err := p.writeOverlay(filepath.Join(s.tmp, "cover"), fmt.Sprintf("pkg%d", p.num), overlay)
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(s.tmp, fmt.Sprintf("pkg%d.cover.test", p.num))
	res, err := s.testBuild(p.list.Dir, bin, "-overlay", ov)
	if err != nil {
		return "", nil, err
	}
	if res.ExitCode != 0 {
		return "", nil, errCoverBuild{firstLines(string(res.Stderr), 8)}
	}
	return bin, files, nil
}

// runCoverBaseline is runBaseline for packages that take the generated
// TestMain, from the binary buildCoverBinary built: one process for the
// tests alone and, beside it, one for the tests together.
func (s *session) runCoverBaseline(p *pkg, bin string, files []coverFile) (*baseline, error) {
	s.p.Step("baseline of %s: running the tests one by one in one process, and together in another", p.relDir)
	var results []coverResult
	var allBlocks []block
	var aloneErr, togetherErr error
	var together sandbox.Result
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		together, togetherErr = mutate.RunBaseline(s.ctx, s.runner, "the baseline of "+p.relDir+" (tests together)", sandbox.Command{Dir: p.list.Dir, Args: []string{bin, "-test.count=1", "-test.v"}}, 0)
	}()
	results, allBlocks, aloneErr = s.runCoverProcess(p, bin, files, "")
	wg.Wait()
	if aloneErr != nil {
		return nil, aloneErr
	}
	if togetherErr != nil {
		return nil, togetherErr
	}
	return judgeBaseline(p, results, allBlocks, together)
}

// errCoverBuild: the binary with counters did not build; the caller falls
// back to the per-process baseline, whose error message says why.
type errCoverBuild struct{ stderr string }

func (e errCoverBuild) Error() string { return "the per-test coverage build failed: " + e.stderr }

// judgeBaseline compares each test's run alone with the run of all tests
// together: a test that fails both ways makes the baseline red; one whose
// runs disagree is quarantined.
func judgeBaseline(p *pkg, alone []coverResult, allBlocks []block, res sandbox.Result) (*baseline, error) {
	together := topLevelResults(string(res.Stdout))
	b := &baseline{Blocks: allBlocks}
	var red []string
	for _, r := range alone {
		if r.name == "" {
			continue
		}
		passed, seen := together[r.name]
		switch {
		case r.passed && (!seen || passed):
			b.Tests = append(b.Tests, baseTest{Name: r.name, Duration: r.duration, Blocks: r.blocks})
		case !r.passed && seen && !passed:
			red = append(red, r.name)
		case !r.passed && !seen && res.ExitCode != 0:
			red = append(red, r.name)
		default:
			b.Quarantined = append(b.Quarantined, p.relDir+":"+r.name)
		}
	}
	if len(red) > 0 {
		return nil, &mutate.BaselineError{Package: p.relDir, Failed: red}
	}
	return b, nil
}
