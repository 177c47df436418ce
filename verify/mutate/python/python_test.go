package python

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

const pyCalcBase = `def old(n):
    return n > 3
`

const pyCalcHead = `LIMIT = 10
MODULE_FLAG = LIMIT > 5


def old(n):
    return n > 3


def small_a(n):
    return n <= 10


def small_b(n):
    return n <= 10


def describe(n):
    if n < 0:
        return "negative"
    return "non-negative"


def first_three(xs):
    if len(xs) < 3:
        return None
    return xs[:3]


def drain(x):
    while x != 0:
        x -= 2
    return x


def is_missing(d, k):
    return d.get(k) is None


def has(d, k):
    return k in d


def last(xs):
    return xs[len(xs) - 1]  # bcode: ignore-mutant


def positive(n):
    return n >= 0  # bcode: ignore-mutant zero counts as positive: callers never pass it


def either(a, b):
    if a or not b:
        return True
    return False
`

const pyTestBase = `from pkg import calc


def test_old():
    assert calc.old(4)
`

const pyTestHead = `from pkg import calc


def test_old():
    assert calc.old(4)


def test_small_a():
    assert calc.small_a(3) and not calc.small_a(20)


def test_small_b():
    assert calc.small_b(3)


def test_small_b_boundary():
    assert calc.small_b(10) and not calc.small_b(11)


def test_describe():
    assert calc.describe(5) == "non-negative"


def test_first_three():
    assert calc.first_three([1, 2, 3, 4]) == [1, 2, 3]
    assert calc.first_three([1]) is None


def test_drain():
    assert calc.drain(4) == 0


def test_lookup():
    assert calc.is_missing({}, "a") and not calc.is_missing({"a": 1}, "a")
    assert calc.has({"a": 1}, "a") and not calc.has({}, "a")


def test_last():
    assert calc.last([1, 2]) == 2


def test_positive():
    assert calc.positive(5)


def test_either():
    assert calc.either(True, True) and not calc.either(False, True)


def test_flag():
    assert calc.old(5) and calc.MODULE_FLAG
`

// requirePytest skips (or fails under BCODE_REQUIRE_ALL=1) without
// /usr/bin/python3 and pytest.
func requirePytest(t *testing.T) {
	t.Helper()
	testenv.SystemPytest(t)
}

type pyCalcRun struct {
	dir           string
	change        *verify.Change
	schema, fresh *mutate.Report
	err           error
}

var (
	pyCalcMu sync.Mutex
	pyCalc   *pyCalcRun
)

// pyCalcReports runs the engine on the Python calc repository twice, with
// schemata and with a fresh process per mutant, and shares the reports.
func pyCalcReports(t *testing.T) *pyCalcRun {
	t.Helper()
	testenv.Git(t)
	requirePytest(t)
	pyCalcMu.Lock()
	defer pyCalcMu.Unlock()
	if pyCalc != nil {
		if pyCalc.err != nil {
			t.Fatal(pyCalc.err)
		}
		return pyCalc
	}
	pyCalc = &pyCalcRun{err: errors.New("setting up the Python calc repository failed in an earlier test")}
	dir, err := os.MkdirTemp("", "bcode-mutate-pycalc-")
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	change := mutatetest.MakeRepoFiles(t, repo, map[string]string{
		"pkg/__init__.py":     "",
		"pkg/calc.py":         pyCalcBase,
		"tests/test_calc.py":  pyTestBase,
		"tests/__init__.py":   "",
		"tests/helpers.py":    "def unused(n):\n    return n\n",
		"pkg/test_inline.py":  "def test_inline():\n    assert True\n",
		"setup.cfg":           "[tool:pytest]\ntestpaths = tests\n",
		"docs/not_python.txt": "x",
	}, map[string]string{
		"pkg/calc.py":        pyCalcHead,
		"tests/test_calc.py": pyTestHead,
		"tests/helpers.py":   "def unused(n):\n    return n > 1\n",
		"pkg/test_inline.py": "def test_inline():\n    assert 1 < 2\n",
	})
	opts := mutate.Options{Workers: 2, CacheDir: filepath.Join(dir, "cache"), Python: "/usr/bin/python3"}
	schema, err := runPy(context.Background(), host.New(), repo, change, opts, verify.NoProgress{})
	if err != nil {
		pyCalc.err = fmt.Errorf("Run: %w", err)
		t.Fatal(pyCalc.err)
	}
	opts.Overlay = true
	fresh, err := runPy(context.Background(), host.New(), repo, change, opts, verify.NoProgress{})
	if err != nil {
		pyCalc.err = fmt.Errorf("Run (fresh): %w", err)
		t.Fatal(pyCalc.err)
	}
	*pyCalc = pyCalcRun{dir: repo, change: change, schema: schema, fresh: fresh}
	return pyCalc
}

func pyFind(t *testing.T, rep *mutate.Report, line int, op, mutated string) mutate.Mutant {
	t.Helper()
	for _, m := range rep.Mutants {
		if m.Line == line && m.Operator == op && m.Mutated == mutated {
			return m
		}
	}
	var got []string
	for _, m := range rep.Mutants {
		got = append(got, fmt.Sprintf("%s:%d %s %s %s", m.File, m.Line, m.Operator, m.Mutated, m.Verdict))
	}
	t.Fatalf("no %s mutant %q at line %d; have:\n%s", op, mutated, line, strings.Join(got, "\n"))
	return mutate.Mutant{}
}

func TestPythonBoundaryNotPinnedSurvives(t *testing.T) {
	c := pyCalcReports(t)
	line := mutatetest.LineOf(t, pyCalcHead, "def small_a") + 1
	m := pyFind(t, c.schema, line, mutate.OpConditionalBoundary, "n < 10")
	if m.Verdict != mutate.Survived {
		t.Fatalf("n <= 10 -> n < 10 in small_a: %s (%s), want survived", m.Verdict, m.Detail)
	}
	if m.File != "pkg/calc.py" || m.Col != 12 || m.EndCol != 19 || m.Original != "n <= 10" || m.Func != "small_a" {
		t.Errorf("reported at %s:%d:%d-%d %q in %q, want pkg/calc.py:%d:12-19 \"n <= 10\" in small_a", m.File, m.Line, m.Col, m.EndCol, m.Original, m.Func, line)
	}
	if !m.Schema || strings.Join(m.Tests, ",") != "tests/test_calc.py::test_small_a" {
		t.Errorf("schema %v, tests %v: want the schema run of exactly test_small_a", m.Schema, m.Tests)
	}
}

func TestPythonBoundaryTestKills(t *testing.T) {
	c := pyCalcReports(t)
	m := pyFind(t, c.schema, mutatetest.LineOf(t, pyCalcHead, "def small_b")+1, mutate.OpConditionalBoundary, "n < 10")
	if m.Verdict != mutate.Killed || m.KilledBy != "tests/test_calc.py::test_small_b_boundary" {
		t.Fatalf("n <= 10 -> n < 10 in small_b: %s by %q, want killed by test_small_b_boundary", m.Verdict, m.KilledBy)
	}
	// The gate credits the kill to that test, named the way the Python
	// adapter names tests.
	sum := mutate.Summarize(c.schema, []verify.Test{{Language: "python", Package: "tests/test_calc.py", File: "tests/test_calc.py", Name: "test_small_b_boundary"}}, []mutate.Engine{New()})
	if sum.CreditedKills == 0 || sum.Note != "" {
		t.Errorf("summary %+v: want a credited kill", sum)
	}
	none := mutate.Summarize(c.schema, []verify.Test{{Language: "python", Package: "tests/test_calc.py", File: "tests/test_calc.py", Name: "test_positive"}}, []mutate.Engine{New()})
	if none.CreditedKills != 0 {
		t.Errorf("test_positive kills nothing, summary says %d", none.CreditedKills)
	}
}

func TestPythonUncoveredBranch(t *testing.T) {
	c := pyCalcReports(t)
	m := pyFind(t, c.schema, mutatetest.LineOf(t, pyCalcHead, `return "negative"`), OpNoneReturn, "None")
	if m.Verdict != mutate.NotCovered || len(m.Tests) != 0 {
		t.Fatalf("return \"negative\" is never reached: %s, tests %v; want not_covered", m.Verdict, m.Tests)
	}
	covered := pyFind(t, c.schema, mutatetest.LineOf(t, pyCalcHead, "if n < 0"), mutate.OpRelationalNegation, "n >= 0")
	if covered.Verdict != mutate.Killed {
		t.Errorf("n < 0 -> n >= 0 is reached by test_describe: %s", covered.Verdict)
	}
}

func TestPythonEquivalentPruned(t *testing.T) {
	c := pyCalcReports(t)
	line := mutatetest.LineOf(t, pyCalcHead, "if len(xs) < 3")
	var pruned *mutate.Mutant
	for i, m := range c.schema.Pruned {
		if m.Line == line && m.Operator == mutate.OpConstantBound && m.Mutated == "4" {
			pruned = &c.schema.Pruned[i]
		}
	}
	if pruned == nil || pruned.Verdict != mutate.Pruned || !strings.Contains(pruned.Detail, "cannot differ") {
		t.Fatalf("len(xs) < 4 is len(xs) <= 3 on integers and must be pruned; pruned: %+v", c.schema.Pruned)
	}
	for _, m := range c.schema.Mutants {
		if m.Line == line && m.Operator == mutate.OpConstantBound && m.Mutated == "4" {
			t.Fatalf("the pruned mutant also ran: %+v", m)
		}
	}
	// The other direction differs and runs.
	if m := pyFind(t, c.schema, line, mutate.OpConstantBound, "2"); m.Verdict == mutate.Pruned {
		t.Errorf("len(xs) < 2 can differ: %s", m.Verdict)
	}
}

func TestPythonInfiniteLoopTimesOut(t *testing.T) {
	c := pyCalcReports(t)
	line := mutatetest.LineOf(t, pyCalcHead, "while x != 0")
	for _, rep := range []*mutate.Report{c.schema, c.fresh} {
		m := pyFind(t, rep, line, mutate.OpConstantBound, "1")
		if m.Verdict != mutate.Timeout || m.KilledBy != "" {
			t.Fatalf("x != 1 with x stepping by 2 from 4 never ends: %s (killed by %q, %s), want timeout", m.Verdict, m.KilledBy, m.Detail)
		}
	}
	if k := pyFind(t, c.schema, line, mutate.OpRelationalNegation, "x == 0"); k.Verdict != mutate.Killed {
		t.Errorf("x == 0 returns 4: %s", k.Verdict)
	}
}

func TestPythonSuppressionNeedsReason(t *testing.T) {
	c := pyCalcReports(t)
	pos := mutatetest.LineOf(t, pyCalcHead, "return n >= 0")
	m := pyFind(t, c.schema, pos, mutate.OpConditionalBoundary, "n > 0")
	if m.Verdict != mutate.Ignored || m.IgnoreReason != "zero counts as positive: callers never pass it" {
		t.Errorf("directive with a reason: %s %q, want ignored with its reason", m.Verdict, m.IgnoreReason)
	}
	last := mutatetest.LineOf(t, pyCalcHead, "return xs[len(xs) - 1]")
	var bare bool
	for _, e := range c.schema.Errors {
		if strings.HasPrefix(e, fmt.Sprintf("pkg/calc.py:%d:", last)) && strings.Contains(e, "needs a reason") {
			bare = true
		}
	}
	if !bare {
		t.Errorf("a bare directive must be reported; errors: %v", c.schema.Errors)
	}
	a := pyFind(t, c.schema, last, mutate.OpArithIndex, "len(xs) + 1")
	if a.Verdict != mutate.Killed || a.IgnoreReason != "" {
		t.Errorf("len(xs) - 1 -> len(xs) + 1 under a bare directive: %s, want killed", a.Verdict)
	}
}

func TestPythonOperators(t *testing.T) {
	c := pyCalcReports(t)
	id := pyFind(t, c.schema, mutatetest.LineOf(t, pyCalcHead, "is None"), OpIdentityNegation, "d.get(k) is not None")
	in := pyFind(t, c.schema, mutatetest.LineOf(t, pyCalcHead, "return k in d"), OpMembershipNegation, "k not in d")
	b := pyFind(t, c.schema, mutatetest.LineOf(t, pyCalcHead, "return True"), mutate.OpBoolLiteral, "False")
	neg := pyFind(t, c.schema, mutatetest.LineOf(t, pyCalcHead, "if a or not b"), mutate.OpConditionNegation, "b")
	for _, m := range []mutate.Mutant{id, in, b, neg} {
		if m.Verdict != mutate.Killed {
			t.Errorf("%s %q -> %q: %s, want killed", m.Operator, m.Original, m.Mutated, m.Verdict)
		}
	}
	// Only changed lines of non-test sources: not old(), not test files,
	// not test support below tests/.
	old := mutatetest.LineOf(t, pyCalcHead, "return n > 3")
	for _, m := range append(append([]mutate.Mutant(nil), c.schema.Mutants...), c.schema.Pruned...) {
		if m.File != "pkg/calc.py" || m.Line == old {
			t.Errorf("mutant %s at %s:%d is not on a changed line of a non-test source", m.ID, m.File, m.Line)
		}
	}
}

func TestPythonImportTimeMutantRunsFresh(t *testing.T) {
	c := pyCalcReports(t)
	m := pyFind(t, c.schema, mutatetest.LineOf(t, pyCalcHead, "MODULE_FLAG ="), mutate.OpRelationalNegation, "LIMIT <= 5")
	if m.Verdict != mutate.Killed || m.Schema || m.KilledBy != "tests/test_calc.py::test_flag" {
		t.Fatalf("module-level LIMIT > 5 -> LIMIT <= 5: %s by %q (schema %v), want killed by test_flag in a fresh process", m.Verdict, m.KilledBy, m.Schema)
	}
}

// TestPythonSchemaAgreesWithFresh: the schemata run and the honest baseline
// (a fresh interpreter per mutant, the mutant applied as text) agree on
// every mutant.
func TestPythonSchemaAgreesWithFresh(t *testing.T) {
	c := pyCalcReports(t)
	if len(c.schema.Mutants) != len(c.fresh.Mutants) || len(c.schema.Mutants) < 20 {
		t.Fatalf("%d schema mutants, %d fresh", len(c.schema.Mutants), len(c.fresh.Mutants))
	}
	for i, s := range c.schema.Mutants {
		f := c.fresh.Mutants[i]
		if s.ID != f.ID || s.Verdict != f.Verdict || s.KilledBy != f.KilledBy {
			t.Errorf("%s:%d %s %q: schema %s by %q, fresh %s by %q", s.File, s.Line, s.Operator, s.Mutated, s.Verdict, s.KilledBy, f.Verdict, f.KilledBy)
		}
	}
	if c.schema.Stats.SchemaMutants == 0 || c.fresh.Stats.SchemaMutants != 0 {
		t.Errorf("schema mutants: %d with schemata, %d fresh", c.schema.Stats.SchemaMutants, c.fresh.Stats.SchemaMutants)
	}
	if c.fresh.Stats.BaselineCached != 1 {
		t.Errorf("the second run must reuse the cached baseline: %+v", c.fresh.Stats)
	}
}

// TestPythonIDsStable: an edit above a function moves its mutants' lines
// but not their IDs.
func TestPythonIDsStable(t *testing.T) {
	c := pyCalcReports(t)
	moved := "import os\n\n\n" + pyCalcHead
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pkg/calc.py"), []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := &verify.Change{Files: []verify.FileChange{{Path: "pkg/calc.py", Status: verify.Modified, Changed: []verify.LineRange{{Start: 1, End: 200}}}}}
	// Its own cache directory: WithDefaults would choose the user's.
	o := mutate.Options{Python: "/usr/bin/python3", CacheDir: t.TempDir()}.WithDefaults()
	ps := &pySession{ctx: context.Background(), runner: host.New(), root: dir, opts: &o, p: verify.NoProgress{},
		rep: &mutate.Report{Sources: map[string]string{}, TestFiles: map[string]string{}}, tmp: t.TempDir(), py: "/usr/bin/python3"}
	ps.files = []*pyFile{{rel: "pkg/calc.py", abs: filepath.Join(dir, "pkg/calc.py"), src: []byte(moved), ranges: ch.Files[0].Changed}}
	if err := os.MkdirAll(filepath.Join(ps.tmp, "py"), 0o755); err != nil {
		t.Fatal(err)
	}
	ps.script = filepath.Join(ps.tmp, "py", "pymutate.py")
	if err := os.WriteFile(ps.script, pyEngine, 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := ps.startProc(false, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = ps.generate(proc)
	proc.stop() // only its mutants are read
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, m := range ps.files[0].mutants {
		ids[m.ID] = m.Line
	}
	for _, m := range c.schema.Mutants {
		line, ok := ids[m.ID]
		if m.Func == "old" {
			continue
		}
		if !ok || line != m.Line+3 {
			t.Errorf("mutant %s (%s %q at line %d) after the edit: found %v at line %d, want line %d", m.ID, m.Operator, m.Mutated, m.Line, ok, line, m.Line+3)
		}
	}
}

func TestPythonMutationReport(t *testing.T) {
	c := pyCalcReports(t)
	var buf bytes.Buffer
	if err := mutate.WriteMutationReport(&buf, c.schema); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Files map[string]struct {
			Language string `json:"language"`
			Source   string `json:"source"`
		} `json:"files"`
		TestFiles map[string]struct {
			Source string `json:"source"`
		} `json:"testFiles"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	f, ok := doc.Files["pkg/calc.py"]
	if !ok || f.Language != "python" || f.Source != pyCalcHead {
		t.Fatalf("files: %v", doc.Files)
	}
	if tf, ok := doc.TestFiles["tests/test_calc.py"]; !ok || tf.Source != pyTestHead {
		t.Errorf("test files: %v", doc.TestFiles)
	}
}

// pyCacheHead's double() memoizes in a module global: a mutant that
// computes a wrong value and stores it would make later mutants' tests read
// it, if they ran in the same process without a check. In a fresh process
// per mutant, `n > 2`, `n > 0`, `n >= 1` and `return None` on the cache hit
// survive (the test calls double once); with the wrong 3 left in CACHE by
// `n <= 1`, they would all be killed.
const pyCacheHead = `CACHE = {}


def double(n):
    v = n * 2 if n > 1 else n
    if n in CACHE:
        return CACHE[n]
    CACHE[n] = v
    return v


def clamp(n, hi):
    return hi if n > hi else n
`

const pyCacheTest = `from pkg import cache


def test_double():
    assert cache.double(3) == 6


def test_clamp():
    assert cache.clamp(5, 10) == 5
    assert cache.clamp(11, 10) == 10
`

// pyLoopHead's step() loops forever under two of its mutants (x != 1 and
// x != -1, with x stepping by 2 from 4): timeouts in the middle of a batch.
const pyLoopHead = `def step(x):
    if x < 0:
        return 0
    while x != 0:
        x -= 2
    return x + 1
`

const pyLoopTest = `from pkg import loop


def test_step():
    assert loop.step(4) == 1
    assert loop.step(-5) == 0
`

// pyBatchRepo is a repository whose change adds pkg/cache.py and
// pkg/loop.py with their tests.
func pyBatchRepo(t *testing.T) (string, *verify.Change) {
	t.Helper()
	testenv.Git(t)
	requirePytest(t)
	repo := filepath.Join(t.TempDir(), "repo")
	change := mutatetest.MakeRepoFiles(t, repo, map[string]string{
		"pkg/__init__.py":   "",
		"tests/__init__.py": "",
		"setup.cfg":         "[tool:pytest]\ntestpaths = tests\n",
	}, map[string]string{
		"pkg/cache.py":        pyCacheHead,
		"pkg/loop.py":         pyLoopHead,
		"tests/test_cache.py": pyCacheTest,
		"tests/test_loop.py":  pyLoopTest,
	})
	return repo, change
}

// TestPythonBatchStateChangeAgreesWithFresh: one schema worker runs every
// mutant of pkg/cache.py, and one of them leaves a wrong value in a module
// global; every mutant still gets the verdict a fresh process per mutant
// gives it, in both isolation levels, and the state check is what made the
// difference (the worker names CACHE as why it started a new child).
func TestPythonBatchStateChangeAgreesWithFresh(t *testing.T) {
	repo, change := pyBatchRepo(t)
	cache := t.TempDir()
	run := func(o mutate.Options) *mutate.Report {
		t.Helper()
		o.CacheDir, o.Python, o.Files = cache, "/usr/bin/python3", []string{"pkg/cache.py"}
		rep, err := runPy(context.Background(), host.New(), repo, change, o, verify.NoProgress{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	fresh := run(mutate.Options{Workers: 2, Overlay: true})
	state := run(mutate.Options{Workers: 1})
	fork := run(mutate.Options{Workers: 1, PythonIsolation: mutate.PythonIsolateFork})
	if len(fresh.Mutants) < 8 {
		t.Fatalf("%d mutants of pkg/cache.py, want at least 8", len(fresh.Mutants))
	}
	line := mutatetest.LineOf(t, pyCacheHead, "v = n * 2")
	if m := pyFind(t, fresh, line, mutate.OpConstantBound, "2"); m.Verdict != mutate.Survived {
		t.Fatalf("n > 1 -> n > 2 in a fresh process: %s, want survived (the fixture no longer tests what it should)", m.Verdict)
	}
	if m := pyFind(t, fresh, line, mutate.OpRelationalNegation, "n <= 1"); m.Verdict != mutate.Killed {
		t.Fatalf("n > 1 -> n <= 1 in a fresh process: %s, want killed", m.Verdict)
	}
	for name, rep := range map[string]*mutate.Report{"state": state, "fork": fork} {
		if len(rep.Mutants) != len(fresh.Mutants) {
			t.Fatalf("%s: %d mutants, fresh %d", name, len(rep.Mutants), len(fresh.Mutants))
		}
		for i, m := range rep.Mutants {
			f := fresh.Mutants[i]
			if m.ID != f.ID || m.Verdict != f.Verdict || m.KilledBy != f.KilledBy {
				t.Errorf("%s: %s:%d %s %q: %s by %q, fresh %s by %q", name, m.File, m.Line, m.Operator, m.Mutated, m.Verdict, m.KilledBy, f.Verdict, f.KilledBy)
			}
			if !m.Schema && m.Verdict != mutate.NotCovered {
				t.Errorf("%s: %s:%d %q did not run in a schema worker", name, m.File, m.Line, m.Mutated)
			}
		}
	}
	var note string
	for _, n := range state.Notes {
		if strings.HasPrefix(n, "Python schema workers") {
			note = n
		}
	}
	if !strings.Contains(note, "pkg.cache.CACHE") {
		t.Errorf("the state worker's note %q does not say CACHE changed", note)
	}
	if c := state.Stats.PythonChildren; c == 0 || c >= state.Stats.SchemaMutants {
		t.Errorf("%d forked children for %d schema mutants: want fewer children than mutants (clamp's mutants share one)", c, state.Stats.SchemaMutants)
	}
	if c := fork.Stats.PythonChildren; c != fork.Stats.SchemaMutants {
		t.Errorf("isolation fork: %d forked children for %d schema mutants, want one each", c, fork.Stats.SchemaMutants)
	}
}

// TestPythonBatchTimeoutMidway: two mutants in the middle of a worker's
// batch loop forever; each gets timeout, and every mutant after them still
// gets its own verdict from a new child.
func TestPythonBatchTimeoutMidway(t *testing.T) {
	repo, change := pyBatchRepo(t)
	opts := mutate.Options{Workers: 1, CacheDir: t.TempDir(), Python: "/usr/bin/python3", Files: []string{"pkg/loop.py"}, RunTimeout: 1500 * time.Millisecond}
	rep, err := runPy(context.Background(), host.New(), repo, change, opts, verify.NoProgress{})
	if err != nil {
		t.Fatal(err)
	}
	loop := mutatetest.LineOf(t, pyLoopHead, "while x != 0")
	want := []struct {
		line        int
		op, mutated string
		verdict     mutate.Verdict
	}{
		{mutatetest.LineOf(t, pyLoopHead, "if x < 0"), mutate.OpRelationalNegation, "x >= 0", mutate.Killed},
		{loop, mutate.OpRelationalNegation, "x == 0", mutate.Killed},
		{loop, mutate.OpConstantBound, "1", mutate.Timeout},
		{loop, mutate.OpConstantBound, "-1", mutate.Timeout},
		{mutatetest.LineOf(t, pyLoopHead, "return x + 1"), OpNoneReturn, "None", mutate.Killed},
	}
	for _, w := range want {
		m := pyFind(t, rep, w.line, w.op, w.mutated)
		if m.Verdict != w.verdict || !m.Schema {
			t.Errorf("line %d %s %q: %s (schema %v, %s), want %s in a schema worker", w.line, w.op, w.mutated, m.Verdict, m.Schema, m.Detail, w.verdict)
		}
		if w.verdict == mutate.Timeout && m.KilledBy != "" {
			t.Errorf("a timeout is never a kill: %q killed by %q", w.mutated, m.KilledBy)
		}
	}
	for _, m := range rep.Mutants {
		if m.Verdict == mutate.NoVerdict {
			t.Errorf("%s:%d %q: no verdict (%s)", m.File, m.Line, m.Mutated, m.Detail)
		}
	}
}

// engineCounter counts the mutation engine's processes a Run starts.
type engineCounter struct {
	sandbox.Runner
	engines atomic.Int32
}

func (c *engineCounter) Run(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	for _, a := range cmd.Args {
		if filepath.Base(a) == "pymutate.py" {
			c.engines.Add(1)
		}
	}
	return c.Runner.Run(ctx, cmd)
}

// TestPythonOneInterpreterPerRun: a change whose mutants all run from the
// schema starts one interpreter, which generates, runs the baseline and
// both workers as forks of its collected suite; every mutant gets its
// verdict from a worker, and a second run with the baseline cached starts
// one interpreter too.
func TestPythonOneInterpreterPerRun(t *testing.T) {
	repo, change := pyBatchRepo(t)
	cache := t.TempDir()
	for _, run := range []string{"baseline run", "baseline cached"} {
		r := &engineCounter{Runner: host.New()}
		rep, err := runPy(context.Background(), r, repo, change, mutate.Options{Workers: 2, CacheDir: cache, Python: "/usr/bin/python3", Files: []string{"pkg/cache.py"}}, verify.NoProgress{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Stats.SchemaMutants < 8 {
			t.Fatalf("%s: %d schema mutants, want at least 8", run, rep.Stats.SchemaMutants)
		}
		for _, m := range rep.Mutants {
			if m.Verdict == mutate.NoVerdict || m.Verdict == "" || !m.Schema && m.Verdict != mutate.NotCovered {
				t.Errorf("%s: %s:%d %s: %s, schema %v (%s)", run, m.File, m.Line, m.Operator, m.Verdict, m.Schema, m.Detail)
			}
		}
		if n := r.engines.Load(); n != 1 {
			t.Errorf("%s: %d engine processes started, want 1 (the session)", run, n)
		}
		if cached := rep.Stats.BaselineCached; (run == "baseline cached") != (cached == 1) {
			t.Errorf("%s: %d cached baselines", run, cached)
		}
	}
}
