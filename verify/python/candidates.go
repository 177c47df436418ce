package python

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// IsTestSupport reports whether p belongs to the tests only: test files,
// conftest.py, modules named for tests (testutil.py, testing.py), and
// anything under a test directory (tests/, test/, testing/, fixtures/,
// testdata/, or one named test_*): helpers that are not test_*.py, plugins,
// data.
func (a *Adapter) IsTestSupport(p string) bool {
	if a.IsTestFile(p) || path.Base(p) == "conftest.py" {
		return true
	}
	if name, ok := strings.CutSuffix(path.Base(p), ".py"); ok && testNamed(name) {
		return true // testutil.py, testing.py, helpers_tests.py: made for tests wherever they live
	}
	for _, el := range strings.Split(path.Dir(p), "/") {
		switch {
		case el == "tests" || el == "test" || el == "testing" || el == "fixtures" || el == "testdata":
			return true
		case strings.HasPrefix(el, "test_") || strings.HasSuffix(el, "_tests"):
			return true
		}
	}
	return false
}

// Candidates implements verify.Adapter. The units are the changed test
// files that exist on the head, and, for each other changed support file
// (conftest.py, a helper or plugin, data), the test files below its
// directory — or below the nearest directory above it that has any.
func (a *Adapter) Candidates(_ context.Context, _ sandbox.Runner, dir string, change *verify.Change) (verify.Candidates, error) {
	var c verify.Candidates
	var support []verify.FileChange
	for _, f := range change.Files {
		if a.IsTestSupport(f.Path) {
			c.Support = append(c.Support, f.Path)
			support = append(support, f)
		}
	}
	if len(support) == 0 {
		return c, nil
	}
	files, err := pyFiles(dir)
	if err != nil {
		return c, fmt.Errorf("listing python files in %s: %w", dir, err)
	}
	var tests []string
	for _, f := range files {
		if a.IsTestFile(f) {
			tests = append(tests, f)
		}
	}
	paths := make([]string, len(support))
	for i, f := range support {
		paths[i] = f.Path
	}
	c.Units = verify.SupportUnits(tests, paths, a.IsTestFile)
	return c, nil
}

// testNamed reports whether a module's name says it is made for tests.
func testNamed(name string) bool {
	name = strings.ToLower(name)
	return strings.HasPrefix(name, "test") || strings.Contains(name, "_test") || strings.HasSuffix(name, "tests") ||
		strings.Contains(name, "testutil") || strings.Contains(name, "testing")
}

var (
	missingAttr    = regexp.MustCompile(`has no attribute '([A-Za-z_]\w*)'`)
	missingName    = regexp.MustCompile(`name '([A-Za-z_]\w*)' is not defined`)
	unexpectedKw   = regexp.MustCompile(`unexpected keyword argument '([A-Za-z_]\w*)'`)
	signatureOf    = regexp.MustCompile(`([A-Za-z_]\w*)\(\) (?:takes|missing|got)`)
	fixtureMissing = regexp.MustCompile(`fixture '([A-Za-z_]\w*)' not found`)
)

// JudgeBaseFailure implements verify.BaseFailureJudge: a test that fails
// on the base because a name is missing earns no credit only when the
// change adds that name (a new function, attribute, parameter or fixture,
// or a new signature). An AttributeError or TypeError the bug itself
// raises inside the code under test is a behavioural failure.
func (a *Adapter) JudgeBaseFailure(change *verify.Change, r verify.TestResult) verify.TestResult {
	if r.Outcome != verify.MissingSymbol {
		return r
	}
	text := r.Detail
	var name string
	signature := false
	for _, re := range []*regexp.Regexp{missingAttr, missingName, unexpectedKw, fixtureMissing} {
		if m := re.FindStringSubmatch(text); m != nil {
			name = m[1]
			break
		}
	}
	if name == "" {
		if m := signatureOf.FindStringSubmatch(text); m != nil {
			name, signature = m[1], true
		}
	}
	if name == "" {
		return r // no name to look up: stay on the side of no credit
	}
	if !signature && a.addsName(change, name) {
		return r
	}
	// A call with a signature the change makes is the test using new API
	// when the test (or its infrastructure) makes it; raised inside the
	// code under test, about a name both sides have, it is the base's own
	// code calling its own function wrongly: the bug itself.
	site := raiseSite(text)
	if signature && signatureChanged(change, name) && !a.isProductionFile(site) {
		return r
	}
	r.Outcome = verify.Fail
	why := "the failure is the code's own"
	if a.isProductionFile(site) {
		why = "raised in " + site + ", in the code under test: the failure is the code's own"
	}
	r.Detail = fmt.Sprintf("%s is not a name the change adds: %s\n%s", name, why, r.Detail)
	return r
}

// raiseSiteLine is the last line of pytest's long traceback: the file
// and line the exception was raised at ("pkg/calc.py:5: TypeError").
var raiseSiteLine = regexp.MustCompile(`(?m)^(\S+\.py):\d+: [A-Za-z_][\w.]*$`)

// raiseSite is the file the traceback in text ends in, or "".
func raiseSite(text string) string {
	ms := raiseSiteLine.FindAllStringSubmatch(text, -1)
	if len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1][1]
}

// isProductionFile reports whether p, a path pytest printed, is a Python
// file of the repository's code under test: relative (inside the
// rootdir), and neither a test file, a conftest, nor under a test
// directory (where test helpers live).
func (a *Adapter) isProductionFile(p string) bool {
	if p == "" || path.IsAbs(p) || filepath.IsAbs(p) || strings.HasPrefix(p, "..") || a.IsTestFile(p) {
		return false
	}
	for _, el := range strings.Split(filepath.ToSlash(p), "/") {
		switch el {
		case "conftest.py", "test", "tests", "testing":
			return false
		}
	}
	return true
}

// addsName reports whether the change defines name where the base did
// not: the name occurs more often on the head than on the base in some
// changed Python file of the code (test files that start using a name do
// not add it; conftest.py and helpers may add fixtures, so they count).
func (a *Adapter) addsName(change *verify.Change, name string) bool {
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	for _, f := range change.Files {
		if f.Binary || !strings.HasSuffix(f.Path, ".py") || a.IsTestFile(f.Path) {
			continue
		}
		if len(word.FindAllIndex(f.Head, -1)) > len(word.FindAllIndex(f.Base, -1)) {
			return true
		}
	}
	return false
}

// signatureChanged reports whether a changed file's `def name(` line
// differs between base and head.
func signatureChanged(change *verify.Change, name string) bool {
	def := regexp.MustCompile(`(?m)^\s*(?:async\s+)?def\s+` + regexp.QuoteMeta(name) + `\s*\(.*$`)
	for _, f := range change.Files {
		if f.Binary || !strings.HasSuffix(f.Path, ".py") {
			continue
		}
		b, h := def.FindAll(f.Base, -1), def.FindAll(f.Head, -1)
		if len(b) != len(h) {
			return true
		}
		for i := range b {
			if string(b[i]) != string(h[i]) {
				return true
			}
		}
	}
	return false
}
