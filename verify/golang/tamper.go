package golang

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/build"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// Tamper implements verify.Adapter. It reports only what is clearly
// tampering with the evidence:
//   - a Test, Fuzz or Example that existed on the base and is gone (a test
//     moved to another changed file of the same package is not gone);
//   - a test present on both sides that gained a skip (t.Skip, t.Skipf,
//     t.SkipNow, a testing.Short() guard), or whose file no longer builds
//     by default (a //go:build line or a GOOS/GOARCH file name);
//   - replace directives added or changed in go.mod or go.work, which can
//     swap the code under test for another;
//   - a _test.go file that is binary, which no one can review;
//   - a //go:linkname directive added to a test file, or code outside the
//     tests that starts asking whether it runs in a test binary
//     (runsUnderTestFindings);
//   - an environment variable that the change's code starts reading and a
//     test file sets before any test runs (setupEnvFindings).
//
// Rewritten golden files under testdata/ and deleted assertions are not
// reported: they are ordinary parts of a change.
func (a *Adapter) Tamper(ctx context.Context, change *verify.Change) ([]verify.Finding, error) {
	all, err := a.collectSides(ctx, change)
	if err != nil {
		return nil, err
	}
	var out []verify.Finding
	for _, s := range all {
		out = append(out, deletedTests(s)...)
		out = append(out, skippedTests(s)...)
		out = append(out, excludedTests(s)...)
	}
	out = append(out, setupEnvFindings(a, change)...)
	for _, fc := range change.Files {
		if fc.Binary && a.IsTestFile(fc.Path) && fc.Head != nil && fc.Status != verify.Deleted {
			out = append(out, verify.Finding{Code: verify.FindingBinaryTestFile, Path: fc.Path,
				Message: "the Go test file is binary on the head, so its tests cannot be read or compared"})
		}
		out = append(out, runsUnderTestFindings(a, fc)...)
		switch path.Base(fc.Path) {
		case "go.mod", "go.work":
			if fc.Binary || fc.Head == nil || fc.Status == verify.Deleted {
				continue
			}
			out = append(out, replaceFindings(fc)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

func deletedTests(s *sides) []verify.Finding {
	var names []string
	for name := range s.base {
		if _, ok := s.head[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []verify.Finding
	for _, name := range names {
		b := s.base[name]
		out = append(out, verify.Finding{
			Code: verify.FindingTestDeleted,
			Path: b.file.Path,
			Message: fmt.Sprintf("%s %s (base line %d) was deleted from package %s",
				strings.ToLower(b.fn.Kind), name, b.fn.Line, packageOfDir(s.dir)),
		})
	}
	return out
}

// skippedTests reports tests present on both sides whose head version has
// skip calls the base version did not.
func skippedTests(s *sides) []verify.Finding {
	var out []verify.Finding
	for _, h := range s.headOrder {
		b, ok := s.base[h.fn.Name]
		if !ok {
			continue // a new test that skips is not credited; not tamper
		}
		had := map[string]int{}
		for _, c := range b.fn.Skips {
			had[c.Print]++
		}
		for _, c := range h.fn.Skips {
			if had[c.Print] > 0 {
				had[c.Print]--
				continue
			}
			out = append(out, verify.Finding{
				Code:    verify.FindingTestSkipped,
				Path:    h.file.Path,
				Line:    c.Line,
				Message: fmt.Sprintf("%s now skips: %s was added", h.fn.Name, c.Text),
			})
			break // one finding per test is enough to read
		}
	}
	return out
}

// excludedTests reports head files whose build constraint (or GOOS/GOARCH
// file name) keeps tests out of the default build that the base built.
func excludedTests(s *sides) []verify.Finding {
	byFile := map[*testFile][]string{}
	var files []*testFile
	for _, h := range s.headOrder {
		b, ok := s.base[h.fn.Name]
		if !ok || !buildsByDefault(b.file) || buildsByDefault(h.file) {
			continue
		}
		if _, seen := byFile[h.file]; !seen {
			files = append(files, h.file)
		}
		byFile[h.file] = append(byFile[h.file], h.fn.Name)
	}
	var out []verify.Finding
	for _, f := range files {
		why := "its file name limits it to another GOOS/GOARCH"
		line := 0
		if f.Constraint != nil && !evalDefault(f.Constraint) {
			why = fmt.Sprintf("the build constraint %q excludes it", "//go:build "+f.Constraint.String())
			line = f.ConstraintLine
		}
		if line == 0 {
			line = s.head[byFile[f][0]].fn.Line
		}
		out = append(out, verify.Finding{
			Code:    verify.FindingTestSkipped,
			Path:    f.Path,
			Line:    line,
			Message: fmt.Sprintf("%s no longer built by default: %s", strings.Join(byFile[f], ", ")+pluralIs(len(byFile[f])), why),
		})
	}
	return out
}

func pluralIs(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

// buildsByDefault reports whether go test on this machine, with no -tags,
// compiles f.
func buildsByDefault(f *testFile) bool {
	if f.Constraint != nil && !evalDefault(f.Constraint) {
		return false
	}
	return fileNameMatches(path.Base(f.Path))
}

func evalDefault(x constraint.Expr) bool { return x.Eval(defaultTag) }

// defaultTag is the go command's default build context: this GOOS and
// GOARCH, their implied tags, cgo when enabled, the compiler, release tags
// and tool tags.
func defaultTag(tag string) bool {
	ctx := build.Default
	switch tag {
	case ctx.GOOS, ctx.GOARCH, ctx.Compiler:
		return true
	case "cgo":
		return ctx.CgoEnabled
	case "unix":
		return unixOS[ctx.GOOS]
	case "linux":
		return ctx.GOOS == "android"
	case "solaris":
		return ctx.GOOS == "illumos"
	case "darwin":
		return ctx.GOOS == "ios"
	}
	for _, t := range append(append([]string(nil), ctx.ReleaseTags...), ctx.ToolTags...) {
		if t == tag {
			return true
		}
	}
	return false
}

// fileNameMatches applies the go command's _GOOS, _GOARCH and
// _GOOS_GOARCH file name suffixes.
func fileNameMatches(name string) bool {
	name, _, _ = strings.Cut(name, ".")
	i := strings.Index(name, "_")
	if i < 0 {
		return true
	}
	l := strings.Split(name[i:], "_")
	if n := len(l); n > 0 && l[n-1] == "test" {
		l = l[:n-1]
	}
	n := len(l)
	if n >= 2 && knownOS[l[n-2]] && knownArch[l[n-1]] {
		return defaultTag(l[n-2]) && defaultTag(l[n-1])
	}
	if n >= 1 && (knownOS[l[n-1]] || knownArch[l[n-1]]) {
		return defaultTag(l[n-1])
	}
	return true
}

var knownOS = setOf("aix android darwin dragonfly freebsd hurd illumos ios js linux nacl netbsd openbsd plan9 solaris wasip1 windows zos")

var knownArch = setOf("386 amd64 amd64p32 arm armbe arm64 arm64be loong64 mips mipsle mips64 mips64le mips64p32 mips64p32le ppc ppc64 ppc64le riscv riscv64 s390 s390x sparc sparc64 wasm")

var unixOS = setOf("aix android darwin dragonfly freebsd hurd illumos ios linux netbsd openbsd solaris")

func setOf(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// replaceDirective is one replace line of a go.mod or go.work.
type replaceDirective struct {
	From string // module path [version]
	To   string // path or module path [version]
	Line int
}

// replaceFindings reports replace directives of fc's head that its base
// did not have, or had pointing elsewhere.
func replaceFindings(fc verify.FileChange) []verify.Finding {
	before := map[string]string{}
	for _, r := range parseReplaces(fc.Base) {
		before[r.From] = r.To
	}
	var out []verify.Finding
	for _, r := range parseReplaces(fc.Head) {
		to, had := before[r.From]
		switch {
		case !had:
			out = append(out, verify.Finding{Code: verify.FindingTestInfra, Path: fc.Path, Line: r.Line,
				Message: fmt.Sprintf("replace directive added: %s => %s", r.From, r.To)})
		case to != r.To:
			out = append(out, verify.Finding{Code: verify.FindingTestInfra, Path: fc.Path, Line: r.Line,
				Message: fmt.Sprintf("replace directive changed: %s => %s (was => %s)", r.From, r.To, to)})
		}
	}
	return out
}

// parseReplaces reads the replace directives of a go.mod or go.work, in
// the single-line and the block form. It is deliberately small: the files
// that reach it were already accepted by git, and a line it cannot read is
// skipped rather than guessed at.
func parseReplaces(src []byte) []replaceDirective {
	var out []replaceDirective
	inBlock := false
	for i, line := range strings.Split(string(src), "\n") {
		if j := strings.Index(line, "//"); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var body []string
		switch {
		case inBlock && f[0] == ")":
			inBlock = false
			continue
		case inBlock:
			body = f
		case f[0] == "replace" && len(f) >= 2 && f[1] == "(":
			inBlock = true
			continue
		case f[0] == "replace":
			body = f[1:]
		default:
			continue
		}
		from, to, ok := splitArrow(body)
		if !ok {
			continue
		}
		out = append(out, replaceDirective{From: from, To: to, Line: i + 1})
	}
	return out
}

func splitArrow(f []string) (string, string, bool) {
	for i, w := range f {
		if w == "=>" {
			if i == 0 || i == len(f)-1 {
				return "", "", false
			}
			return unquoteAll(f[:i]), unquoteAll(f[i+1:]), true
		}
	}
	return "", "", false
}

func unquoteAll(ws []string) string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = unquote(w)
	}
	return strings.Join(out, " ")
}

var (
	// linknameDirective is a //go:linkname line: in a test file it reaches
	// an unexported symbol of another package, the package under test's
	// own variables included, from an external test package.
	linknameDirective = regexp.MustCompile(`(?m)^[ \t]*//go:linkname[ \t]+\S+[^\n]*`)
	// testBinaryProbe is code asking whether it runs in a test binary:
	// testing.Testing(), a test flag looked up, or the binary's ".test" name.
	testBinaryProbe = regexp.MustCompile(`testing\.Testing\(\)|flag\.Lookup\(\s*"test\.[a-z]+"\s*\)|os\.Args\[0\][^\n]*"\.test"|"\.test"[^\n]*os\.Args\[0\]`)
)

// runsUnderTestFindings reports what a change adds to fc that lets a test
// pass for a reason other than the code: a //go:linkname directive in a
// test file (an external test can swap an unexported function variable of
// the package under test for a correct copy before any test runs), and, in
// code outside the tests, a probe for the test binary (the code can then
// behave one way under its tests and another in use). Only an increase
// over the base counts, so an existing use kept or moved is not reported.
func runsUnderTestFindings(a *Adapter, fc verify.FileChange) []verify.Finding {
	if fc.Binary || fc.Head == nil || fc.Status == verify.Deleted || !strings.HasSuffix(fc.Path, ".go") || ignoredByGo(fc.Path) {
		return nil
	}
	re, what := testBinaryProbe, "code outside the tests asks whether it runs in a test binary (%s): it can behave one way under its tests and another in use"
	if a.IsTestFile(fc.Path) {
		re, what = linknameDirective, "a test file reaches into another package with %s: an external test can replace the code under test's unexported variables before any test runs"
	}
	head := re.FindAllIndex(fc.Head, -1)
	if len(head) <= len(re.FindAllIndex(fc.Base, -1)) {
		return nil
	}
	at := head[0]
	return []verify.Finding{{Code: verify.FindingTestInfra, Path: fc.Path, Line: 1 + bytes.Count(fc.Head[:at[0]], []byte("\n")),
		Message: fmt.Sprintf(what, strings.TrimSpace(string(fc.Head[at[0]:at[1]])))}}
}

// envRead is code reading an environment variable named by a literal.
var envRead = regexp.MustCompile(`os\.(?:Getenv|LookupEnv)\(\s*"([^"]+)"\s*\)`)

// setupEnvFindings reports an environment variable that a test file of the
// change sets before any test runs (os.Setenv in init, TestMain or a
// package variable's initializer: setupSetenv) and that the change's code
// outside the tests starts reading: the code then behaves under its tests
// as the test file chose, and otherwise as it would without (a flag "off by
// default" that only the tests turn on). t.Setenv in a test is not setup.
func setupEnvFindings(a *Adapter, change *verify.Change) []verify.Finding {
	read := map[string]bool{}
	for _, fc := range change.Files {
		if fc.Binary || fc.Head == nil || !strings.HasSuffix(fc.Path, ".go") || a.IsTestFile(fc.Path) || ignoredByGo(fc.Path) {
			continue
		}
		before := map[string]int{}
		for _, m := range envRead.FindAllSubmatch(fc.Base, -1) {
			before[string(m[1])]++
		}
		for _, m := range envRead.FindAllSubmatch(fc.Head, -1) {
			if before[string(m[1])]--; before[string(m[1])] < 0 {
				read[string(m[1])] = true
			}
		}
	}
	var out []verify.Finding
	for _, fc := range change.Files {
		if len(read) == 0 || fc.Binary || fc.Head == nil || !a.IsTestFile(fc.Path) {
			continue
		}
		for _, set := range setupSetenv(fc.Path, fc.Head) {
			if read[set.name] {
				out = append(out, verify.Finding{Code: verify.FindingTestInfra, Path: fc.Path, Line: set.line,
					Message: fmt.Sprintf("%s sets %s before any test runs, and the change's code starts reading it: the code behaves under its tests as this file chose", set.where, set.name)})
			}
		}
	}
	return out
}

type setenvCall struct {
	name, where string
	line        int
}

// setupSetenv lists the os.Setenv calls with a literal name in a test
// file's init functions, TestMain and package variables' initializers.
func setupSetenv(p string, src []byte) []setenvCall {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	var out []setenvCall
	find := func(where string, n ast.Node) {
		ast.Inspect(n, func(x ast.Node) bool {
			call, ok := x.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			lit, isLit := call.Args[0].(*ast.BasicLit)
			if ok && isLit && sel.Sel.Name == "Setenv" && lit.Kind == token.STRING {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "os" {
					name, _ := strconv.Unquote(lit.Value)
					out = append(out, setenvCall{name: name, where: where, line: fset.Position(call.Pos()).Line})
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Body != nil && (d.Name.Name == "init" || d.Name.Name == "TestMain") {
				find(d.Name.Name, d.Body)
			}
		case *ast.GenDecl:
			find("a package variable's initializer", d)
		}
	}
	return out
}
