package bench

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine/check/labelled"
	"github.com/bcode-dev/bcode/verify"
)

// Problem is one thing wrong with a catalog task; Task is "" for the
// catalog as a whole.
type Problem struct {
	Task    string `json:"task,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Task == "" {
		return p.Message
	}
	return p.Task + ": " + p.Message
}

// Languages are the languages a task may be in.
var Languages = []string{"go", "python", "rust", "javascript"}

var (
	idRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)
	commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)
	moduleRE = regexp.MustCompile(`^[A-Za-z0-9._~/-]+@v[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.+-]*$`)
)

// CheckCatalog is what `bcode bench catalog --check` refuses: ids missing
// or repeated; an unknown suite, group, split or language; provenance
// without its kind, date or (real) source and full commit; a pin that is
// neither a full commit nor module@version; a fixture that does not
// parse; a verify task whose label is not its case's verdict; a tasks
// task without a goal, with a check that does not parse, or with a
// hidden file present in what the agent sees. Counts are reported, never
// refused. Problems come in task order.
func CheckCatalog(moduleRoot string, tasks []Task) []Problem {
	var out []Problem
	seen := map[string]bool{}
	cases := caseCache{root: moduleRoot}
	for _, t := range tasks {
		report := func(format string, args ...any) {
			out = append(out, Problem{Task: t.ID, Message: fmt.Sprintf(format, args...)})
		}
		switch {
		case t.ID == "":
			report("no id (task with fixture %q)", t.Fixture)
		case !idRE.MatchString(t.ID):
			report("id %q: use lower-case letters, digits, dots and dashes", t.ID)
		case seen[t.ID]:
			report("id repeated")
		}
		seen[t.ID] = true
		checkFields(t, report)
		checkProvenance(t, report)
		switch t.Suite {
		case SuiteVerify:
			checkVerifyTask(t, &cases, report)
		case SuiteTasks:
			checkTasksTask(moduleRoot, t, report)
		}
	}
	return out
}

type reportFunc func(format string, args ...any)

func checkFields(t Task, report reportFunc) {
	if t.Suite != SuiteVerify && t.Suite != SuiteTasks {
		report("suite %q: want verify or tasks", t.Suite)
	}
	if !slices.Contains(Groups, t.Group) {
		report("group %q: want one of %v", t.Group, Groups)
	}
	if t.Split != SplitDev && t.Split != SplitHeldout {
		report("split %q: want dev or heldout", t.Split)
	}
	if !slices.Contains(Languages, t.Language) {
		report("language %q: want one of %v", t.Language, Languages)
	}
	if strings.TrimSpace(t.Capability) == "" {
		report("no capability: say in a few words what the task measures")
	}
	if t.Fixture == "" {
		report("no fixture")
	} else if !cleanRel(t.Fixture) {
		report("fixture %q: give a clean path inside the checkout, relative to its root", t.Fixture)
	}
}

// checkProvenance holds the pins: a real task (commit or issue) must be
// pinned to a full commit or module@version, and its date be the day it
// became public.
func checkProvenance(t Task, report reportFunc) {
	p := t.Provenance
	if _, err := time.Parse(time.DateOnly, p.Date); err != nil {
		report("provenance date %q: want YYYY-MM-DD", p.Date)
	}
	switch p.Kind {
	case "commit", "issue":
		if p.Source == "" {
			report("%s provenance without its source repository", p.Kind)
		}
		if p.Kind == "commit" && !commitRE.MatchString(p.Ref) {
			report("commit provenance ref %q is not a full 40-hex commit", p.Ref)
		}
		if t.Pinned == "" {
			report("real provenance (%s) not pinned: give a full 40-hex commit or module@version", p.Kind)
		}
	case "synthetic":
	default:
		report("provenance kind %q: want commit, issue or synthetic", p.Kind)
	}
	if t.Pinned != "" && !commitRE.MatchString(t.Pinned) && !moduleRE.MatchString(t.Pinned) {
		report("pinned %q is neither a full 40-hex commit nor module@version", t.Pinned)
	}
}

func checkVerifyTask(t Task, cases *caseCache, report reportFunc) {
	if !slices.Contains(labelled.Verdicts, t.Label) {
		report("label %q: want one of %v", t.Label, labelled.Verdicts)
	}
	if t.Goal != "" || len(t.Checks) > 0 || len(t.Canaries) > 0 {
		report("a verify task has a label, not a goal, checks or canaries")
	}
	c, err := cases.load(t)
	if err != nil {
		report("%v", err)
		return
	}
	if c.Verdict != t.Label {
		report("label %q but the case %s says verdict %q", t.Label, c.Name, c.Verdict)
	}
}

// caseCache loads each labelled-case directory once.
type caseCache struct {
	root string
	dirs map[string][]labelled.Case
	errs map[string]error
}

func (cc *caseCache) load(t Task) (labelled.Case, error) {
	if !cleanRel(t.Fixture) {
		return labelled.Case{}, fmt.Errorf("%w: task %s: fixture %q is not a path inside the checkout", ErrFixture, t.ID, t.Fixture)
	}
	dir := filepath.Dir(fixturePath(cc.root, t))
	if cc.dirs == nil {
		cc.dirs, cc.errs = map[string][]labelled.Case{}, map[string]error{}
	}
	if _, ok := cc.dirs[dir]; !ok && cc.errs[dir] == nil {
		cc.dirs[dir], cc.errs[dir] = labelled.LoadReal(dir)
	}
	if err := cc.errs[dir]; err != nil {
		return labelled.Case{}, fmt.Errorf("%w: %v", ErrFixture, err)
	}
	name := strings.TrimSuffix(filepath.Base(t.Fixture), ".txtar")
	for _, c := range cc.dirs[dir] {
		if c.Name == name {
			return c, nil
		}
	}
	return labelled.Case{}, fmt.Errorf("%w: %s is not a labelled case", ErrFixture, t.Fixture)
}

// LoadCase reads a verify task's labelled case, a variant resolved
// against the case it starts from (labelled.LoadReal).
func LoadCase(moduleRoot string, t Task) (labelled.Case, error) {
	cc := caseCache{root: moduleRoot}
	return cc.load(t)
}

func checkTasksTask(moduleRoot string, t Task, report reportFunc) {
	if strings.TrimSpace(t.Goal) == "" {
		report("no goal: what the user asks for")
	}
	if t.Label != "" {
		report("a tasks task is graded by its checks, not a label")
	}
	for _, g := range slices.Concat(t.MayChange, t.Protected) {
		if _, err := path.Match(g, ""); err != nil {
			report("glob %q: %v", g, err)
		}
	}
	fx, err := LoadFixture(moduleRoot, t)
	if err != nil {
		report("%v", err)
		return
	}
	tests := checkChecks(t, report)
	for _, leak := range HiddenLeaks(fx, tests) {
		report("hidden file in what the agent sees: %s", leak)
	}
	checkCanaries(t, fx, report)
}

func checkChecks(t Task, report reportFunc) []verify.Test {
	if len(t.Checks) == 0 {
		report("no checks: a tasks task is graded by its hidden checks")
	}
	var tests []verify.Test
	for _, c := range t.Checks {
		ts, err := ParseCheck(c)
		if err != nil {
			report("check %q: %v", c, err)
			continue
		}
		for _, x := range ts {
			if x.Language != t.Language {
				report("check %q is %s, the task is %s", c, x.Language, t.Language)
			}
		}
		tests = append(tests, ts...)
	}
	return tests
}

func checkCanaries(t Task, fx Fixture, report reportFunc) {
	used := CanaryNames(slices.Concat(fx.Base, fx.Reference, fx.Hidden))
	if t.Group == GroupSecurity && len(t.Canaries) == 0 {
		report("a security task plants at least one canary")
	}
	if t.Group == GroupSecurity && len(t.Lures) == 0 {
		report("a security task names its lures: what following the injection looks like")
	}
	for _, n := range used {
		if !slices.Contains(t.Canaries, n) {
			report("fixture uses {{canary:%s}}, which canaries does not list", n)
		}
	}
	for _, n := range t.Canaries {
		if !slices.Contains(used, n) {
			report("canary %s is listed but planted nowhere in the fixture", n)
		}
	}
	for _, f := range fx.Reference {
		if len(CanaryNames([]txtar.File{f})) > 0 {
			report("reference/%s carries a canary: the reference solution must not leak one", f.Name)
		}
		if t.Protects(f.Name) {
			report("reference/%s is a protected path: the reference solution must leave it alone", f.Name)
		}
	}
}

// HiddenLeaks says where hidden content is in what the agent sees or
// what the reference solution writes: a hidden/ path also in reference/
// (unless the file is spliced, below), a hidden file whose content is the
// base's file of that path, and a test the checks select that the base
// defines where the test lives (a Go package's test files, the Python or
// Rust file the check names) in a file no hidden file replaces. A Rust
// source file outside tests/ is spliced at grading (WriteHidden: only its
// test modules are hidden), so there the base and the reference version
// must not define a checked test.
func HiddenLeaks(fx Fixture, tests []verify.Test) []string {
	var out []string
	for _, h := range fx.Hidden {
		if hasFile(fx.Reference, h.Name) && !spliced(h.Name) {
			out = append(out, fmt.Sprintf("hidden/%s is also reference/%s", h.Name, h.Name))
		}
		for _, b := range fx.Base {
			if b.Name == h.Name && bytes.Equal(b.Data, h.Data) {
				out = append(out, fmt.Sprintf("hidden/%s is base/%s, byte for byte", h.Name, h.Name))
			}
		}
	}
	for _, t := range tests {
		for _, side := range []struct {
			name  string
			files []txtar.File
		}{{"base", fx.Base}, {"reference", fx.Reference}} {
			for _, f := range side.files {
				replaced := hasFile(fx.Hidden, f.Name) && !spliced(f.Name)
				if testHome(t, f.Name) && !replaced && definesTest(f, t) {
					out = append(out, fmt.Sprintf("the checked test %s is defined in %s/%s", t.Name, side.name, f.Name))
				}
			}
		}
	}
	return out
}

// spliced reports whether a hidden file of this path gives only its test
// modules at grading (WriteHidden): Rust source outside tests/.
func spliced(name string) bool {
	return strings.HasSuffix(name, ".rs") && !strings.HasPrefix(name, "tests/")
}

// testHome reports whether name is where t lives: a test file of the Go
// package, the Python or Rust file the check names.
func testHome(t verify.Test, name string) bool {
	if t.Language == "go" {
		return strings.HasSuffix(name, "_test.go") && path.Dir(name) == path.Clean(t.Package)
	}
	return name == t.File
}

// definesTest reports whether f defines the test t names: a Go func, a
// Python def, a Rust fn of the test's last name component.
func definesTest(f txtar.File, t verify.Test) bool {
	name := strings.Trim(t.Name, "^$")
	if i := strings.LastIndex(name, "::"); i >= 0 {
		name = name[i+2:]
	}
	name, _, _ = strings.Cut(name, "[") // a pytest parameter
	name, _, _ = strings.Cut(name, "/") // a Go subtest
	if name == "" || strings.ContainsAny(name, ".*+?()|\\") {
		return false
	}
	var kw string
	switch t.Language {
	case "go":
		kw = "func"
	case "python":
		kw = "def"
	case "rust":
		kw = "fn"
	default:
		return false
	}
	re := regexp.MustCompile(`(?m)^\s*` + kw + `\s+` + regexp.QuoteMeta(name) + `\s*[(<]`)
	return re.Match(f.Data)
}
