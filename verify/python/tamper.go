package python

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/bcode-dev/bcode/verify"
)

// Tamper implements verify.Adapter: tests deleted, tests newly skipped (by
// marker, imperative skip, or a class- or module-wide mark), changed test
// infrastructure, and code that starts asking whether pytest runs it.
func (a *Adapter) Tamper(ctx context.Context, change *verify.Change) ([]verify.Finding, error) {
	var out []verify.Finding
	for _, f := range change.Files {
		out = append(out, infraFindings(f)...)
		out = append(out, runsUnderTestFindings(a, f)...)
		if strings.HasPrefix(f.Path, ".venv/") {
			// The snapshot's own .venv/bin/python runs its tests
			// (pythonCandidates): its site-packages and .pth files run
			// before anything isolation can hold.
			out = append(out, verify.Finding{Code: verify.FindingTestInfra, Path: f.Path, Line: firstChanged(f),
				Message: fmt.Sprintf("the snapshot's own Python environment changed (.venv runs the tests): %s %s", f.Path, f.Status)})
		}
		if a.StartupFiles && isStartupFile(f.Path) {
			out = append(out, verify.Finding{Code: verify.FindingTestInfra, Path: f.Path, Line: firstChanged(f),
				Message: fmt.Sprintf("python start-up file changed (run by every test process: [python] startup_files): %s %s", f.Path, f.Status)})
		}
	}
	all, err := a.parseSides(ctx, change, false)
	if err != nil {
		return nil, err
	}
	// A test that moved to another changed file unchanged was not deleted,
	// unless it landed under a skip of its new module or class.
	moved := map[string]bool{}
	for _, s := range all {
		if s.head == nil || len(s.head.ModuleSkips) > 0 {
			continue
		}
		skippedClass := map[string]bool{}
		for _, c := range s.head.Classes {
			skippedClass[c.Name] = len(c.Skips) > 0
		}
		for _, t := range s.head.Tests {
			if !underSkippedClass(t.Name, skippedClass) {
				moved[t.Dump] = true
			}
		}
	}
	for _, s := range all {
		out = append(out, deletedTests(s, moved)...)
		out = append(out, skippedTests(s)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// testRunnerProbe is code asking whether pytest runs it: the variables
// pytest sets (PYTEST_CURRENT_TEST around every test, PYTEST_VERSION) or
// pytest among the imported modules.
var testRunnerProbe = regexp.MustCompile(`PYTEST_CURRENT_TEST|PYTEST_VERSION|["']_?pytest["']\s+in\s+sys\.modules|sys\.modules(?:\.get\(|\[)\s*["']_?pytest["']`)

// runsUnderTestFindings reports a probe for pytest that the change adds to
// code outside the tests and their support (IsTestSupport): such code can
// behave one way under its tests and another in use. Only an increase over
// the base counts.
func runsUnderTestFindings(a *Adapter, f verify.FileChange) []verify.Finding {
	if f.Binary || f.Head == nil || f.Status == verify.Deleted || !strings.HasSuffix(f.Path, ".py") || a.IsTestSupport(f.Path) {
		return nil
	}
	head := testRunnerProbe.FindAllIndex(f.Head, -1)
	if len(head) <= len(testRunnerProbe.FindAllIndex(f.Base, -1)) {
		return nil
	}
	at := head[0]
	return []verify.Finding{{Code: verify.FindingTestInfra, Path: f.Path, Line: 1 + bytes.Count(f.Head[:at[0]], []byte("\n")),
		Message: fmt.Sprintf("code outside the tests asks whether pytest runs it (%s): it can behave one way under its tests and another in use", f.Head[at[0]:at[1]])}}
}

// underSkippedClass reports whether a test "A::B::test_x" sits in a class
// (A or A::B) that carries a skip.
func underSkippedClass(name string, skipped map[string]bool) bool {
	parts := strings.Split(name, "::")
	for i := 1; i < len(parts); i++ {
		if skipped[strings.Join(parts[:i], "::")] {
			return true
		}
	}
	return false
}

func deletedTests(s *sides, moved map[string]bool) []verify.Finding {
	if s.base == nil {
		return nil
	}
	kept := map[string]bool{}
	if s.head != nil {
		for _, t := range s.head.Tests {
			kept[t.Name] = true
		}
	} else if s.change.Head != nil {
		// The head exists but does not parse: ChangedTests reports that,
		// and the suite fails on it; nothing to say about deletions.
		return nil
	}
	var out []verify.Finding
	seen := map[string]bool{}
	for _, t := range s.base.Tests {
		if kept[t.Name] || moved[t.Dump] || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		out = append(out, verify.Finding{
			Code:    verify.FindingTestDeleted,
			Path:    s.change.Path,
			Message: fmt.Sprintf("test %s::%s (base line %d) was deleted", s.change.Path, t.Name, t.Line),
		})
	}
	return out
}

func skippedTests(s *sides) []verify.Finding {
	if s.base == nil || s.head == nil {
		return nil
	}
	var out []verify.Finding
	report := func(line int, what, subject string) {
		out = append(out, verify.Finding{
			Code:    verify.FindingTestSkipped,
			Path:    s.change.Path,
			Line:    line,
			Message: fmt.Sprintf("%s is newly skipped by %s", subject, what),
		})
	}
	baseTests := map[string][]skipHit{}
	for _, t := range s.base.Tests {
		baseTests[t.Name] = t.Skips
	}
	for _, t := range s.head.Tests {
		old, ok := baseTests[t.Name]
		if !ok {
			continue // a new test that is born skipped hides nothing
		}
		for _, h := range newSkips(old, t.Skips) {
			report(h.Line, h.What, fmt.Sprintf("test %s::%s", s.change.Path, t.Name))
		}
	}
	baseClasses := map[string][]skipHit{}
	for _, c := range s.base.Classes {
		baseClasses[c.Name] = c.Skips
	}
	for _, c := range s.head.Classes {
		old, ok := baseClasses[c.Name]
		if !ok {
			continue
		}
		for _, h := range newSkips(old, c.Skips) {
			report(h.Line, h.What, fmt.Sprintf("every test of class %s::%s", s.change.Path, c.Name))
		}
	}
	if len(s.base.Tests) > 0 {
		for _, h := range newSkips(s.base.ModuleSkips, s.head.ModuleSkips) {
			report(h.Line, h.What, "every test of "+s.change.Path)
		}
	}
	return out
}

// newSkips returns the skips of head that base does not have, compared by
// syntax tree and counted, so a second identical marker is new too.
func newSkips(base, head []skipHit) []skipHit {
	have := map[string]int{}
	for _, h := range base {
		have[h.Dump]++
	}
	var out []skipHit
	for _, h := range head {
		if have[h.Dump] > 0 {
			have[h.Dump]--
			continue
		}
		out = append(out, h)
	}
	return out
}

// infraFindings reports changes to the files that decide how pytest
// collects and runs tests. Shared configuration files count only when
// their test sections changed.
func infraFindings(f verify.FileChange) []verify.Finding {
	name := path.Base(f.Path)
	finding := func(line int, msg string) []verify.Finding {
		return []verify.Finding{{Code: verify.FindingTestInfra, Path: f.Path, Line: line, Message: msg}}
	}
	switch name {
	case "conftest.py":
		return finding(firstChanged(f), fmt.Sprintf("pytest fixtures and hooks changed: %s %s", f.Path, f.Status))
	case "pytest.ini", "tox.ini":
		return finding(firstChanged(f), fmt.Sprintf("pytest/tox configuration changed: %s %s", f.Path, f.Status))
	case ".coveragerc":
		return finding(firstChanged(f), fmt.Sprintf("coverage configuration changed: %s %s", f.Path, f.Status))
	case "setup.cfg":
		var out []verify.Finding
		for _, sec := range changedINISections(f.Base, f.Head, isTestINISection) {
			out = append(out, finding(sectionLine(f, sec), fmt.Sprintf("test configuration section [%s] of %s changed", sec, f.Path))...)
		}
		return out
	case "pyproject.toml":
		var out []verify.Finding
		for _, t := range changedTOMLTables(f.Base, f.Head) {
			out = append(out, finding(tomlTableLine(f.Head, t), fmt.Sprintf("test configuration [%s] of %s changed", t, f.Path))...)
		}
		return out
	}
	return nil
}

// isStartupFile reports whether p is a start-up file on the snapshot's
// paths (its root or src/, snapshotPaths).
func isStartupFile(p string) bool {
	d := path.Dir(p)
	return startupFiles[path.Base(p)] && (d == "." || d == "src")
}

// firstChanged is the first changed head line, or 0.
func firstChanged(f verify.FileChange) int {
	if len(f.Changed) > 0 {
		return f.Changed[0].Start
	}
	return 0
}

// isTestINISection: pytest's section of setup.cfg and coverage's.
func isTestINISection(name string) bool {
	return name == "tool:pytest" || name == "pytest" || strings.HasPrefix(name, "coverage:")
}

// iniSections splits an INI file into its sections' normalized bodies
// (comments, blank lines and indentation dropped) and header lines.
func iniSections(src []byte) (map[string]string, map[string]int) {
	body := map[string]string{}
	line := map[string]int{}
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		n++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			cur = strings.TrimSpace(t[1 : len(t)-1])
			if _, ok := line[cur]; !ok {
				line[cur] = n
			}
			continue
		}
		body[cur] += t + "\n"
	}
	return body, line
}

// changedINISections lists the sections selected by keep whose bodies
// differ between base and head.
func changedINISections(base, head []byte, keep func(string) bool) []string {
	b, _ := iniSections(base)
	h, _ := iniSections(head)
	names := map[string]bool{}
	for n := range b {
		names[n] = true
	}
	for n := range h {
		names[n] = true
	}
	var out []string
	for n := range names {
		if keep(n) && b[n] != h[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// sectionLine is the head line of a section's header, or its first
// changed line when the section is gone.
func sectionLine(f verify.FileChange, sec string) int {
	_, lines := iniSections(f.Head)
	if l, ok := lines[sec]; ok {
		return l
	}
	return firstChanged(f)
}

// testTOMLTables are the pyproject.toml tables that configure tests.
var testTOMLTables = []string{"tool.pytest", "tool.coverage"}

// changedTOMLTables lists the test tables that differ between the sides.
// A side that does not parse is compared as text, so a broken head still
// counts as a change when it touches those tables.
func changedTOMLTables(base, head []byte) []string {
	var out []string
	b, berr := tomlTables(base)
	h, herr := tomlTables(head)
	for _, t := range testTOMLTables {
		if berr != nil || herr != nil {
			if bytes.Contains(base, []byte(t)) != bytes.Contains(head, []byte(t)) || (bytes.Contains(head, []byte(t)) && !bytes.Equal(base, head)) {
				out = append(out, t)
			}
			continue
		}
		if !reflect.DeepEqual(b[t], h[t]) {
			out = append(out, t)
		}
	}
	return out
}

// tomlTables extracts the test tables of a pyproject.toml.
func tomlTables(src []byte) (map[string]any, error) {
	out := map[string]any{}
	if len(src) == 0 {
		return out, nil
	}
	var doc map[string]any
	if err := toml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	tool, _ := doc["tool"].(map[string]any)
	for _, t := range testTOMLTables {
		out[t] = tool[strings.TrimPrefix(t, "tool.")]
	}
	return out, nil
}

// tomlHeader matches a table header such as [tool.pytest.ini_options].
var tomlHeader = regexp.MustCompile(`^\s*\[+\s*([^\]]+?)\s*\]+`)

// tomlTableLine is the head line where table t (or a sub-table) starts.
func tomlTableLine(head []byte, t string) int {
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		n++
		if m := tomlHeader.FindStringSubmatch(sc.Text()); m != nil {
			name := strings.ReplaceAll(m[1], `"`, "")
			if name == t || strings.HasPrefix(name, t+".") {
				return n
			}
		}
	}
	return 0
}
