package golang

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

const calcBase = `package calc

// Old was there before the change; its lines are not mutated.
func Old(n int) bool { return n > 3 }
`

const calcHead = `package calc

// Old was there before the change; its lines are not mutated.
func Old(n int) bool { return n > 3 }

// SmallA's test does not pin the boundary.
func SmallA(n int) bool {
	return n <= 10
}

// SmallB's tests do.
func SmallB(n int) bool {
	return n <= 10
}

// Describe has a branch no test takes.
func Describe(n int) string {
	if n < 0 {
		if n < -1000 {
			return "very negative"
		}
		return "negative"
	}
	return "positive"
}

const limit = 10

// Bits loops forever when x > 0 becomes x >= 0.
func Bits(x int) int {
	n := 0
	for x > 0 && limit > 5 {
		x = x / 2
		n++
	}
	return n
}

// Pos compares an unsigned value with zero.
func Pos(u uint) bool {
	return u >= 0 //bcode:ignore-mutant always true for unsigned; kept as documentation
}

// Last returns the last element.
func Last(s []int) int {
	return s[len(s)-1] //bcode:ignore-mutant
}

// Empty reports whether s has no elements.
func Empty(s []int) bool {
	if len(s) == 0 {
		return true
	}
	return false
}

// Either reports whether a or b holds.
func Either(a, b bool) bool {
	if a || !b {
		return true
	}
	return false
}
`

const calcTestBase = `package calc

import "testing"

func TestOld(t *testing.T) {
	if !Old(5) {
		t.Fatal("Old")
	}
}
`

const calcTestHead = calcTestBase + `
func TestSmallA(t *testing.T) {
	if !SmallA(3) || SmallA(50) {
		t.Fatal("SmallA")
	}
}

func TestSmallB(t *testing.T) {
	if !SmallB(3) || SmallB(50) {
		t.Fatal("SmallB")
	}
}

func TestSmallBBoundary(t *testing.T) {
	if !SmallB(10) || SmallB(11) {
		t.Fatal("SmallB boundary")
	}
}

func TestDescribe(t *testing.T) {
	if Describe(5) != "positive" {
		t.Fatal("Describe")
	}
}

func TestBits(t *testing.T) {
	if Bits(8) != 4 {
		t.Fatal("Bits")
	}
}

func TestPos(t *testing.T) {
	if !Pos(1) {
		t.Fatal("Pos")
	}
}

func TestLast(t *testing.T) {
	if Last([]int{1, 2, 3}) != 3 {
		t.Fatal("Last")
	}
}

func TestEmpty(t *testing.T) {
	if !Empty(nil) || Empty([]int{1}) {
		t.Fatal("Empty")
	}
}

func TestEither(t *testing.T) {
	if !Either(true, true) || Either(false, true) {
		t.Fatal("Either")
	}
}
`

// The flaky test passes the first time it runs and fails afterwards: the
// baseline's two runs disagree, so it must be quarantined, not fatal.
const flakyTest = `package calc

import (
	"os"
	"testing"
)

func TestFlaky(t *testing.T) {
	// Created exclusively: of the baseline's two processes (alone and
	// together, at once) exactly one passes, whatever their timing.
	f, err := os.OpenFile("../flaky.marker", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal("ran before")
	}
	f.Close()
	if !SmallA(1) {
		t.Fatal("SmallA")
	}
}
`

type calcRun struct {
	dir    string
	change *verify.Change
	cache  string
	rep    *mutate.Report
	err    error
}

var (
	calcMu  sync.Mutex
	calc    *calcRun
	tempDir string
)

// calcReport runs the engine once on the calc repository and shares the
// report between tests, since the run is what every one of them checks.
func calcReport(t *testing.T) *calcRun {
	t.Helper()
	testenv.Go(t)
	testenv.Git(t)
	calcMu.Lock()
	defer calcMu.Unlock()
	if calc != nil {
		if calc.err != nil {
			t.Fatal(calc.err)
		}
		return calc
	}
	calc = &calcRun{err: errors.New("setting up the calc repository failed in an earlier test")}
	dir, err := os.MkdirTemp("", "bcode-mutate-calc-")
	if err != nil {
		t.Fatal(err)
	}
	tempDir = dir
	repo := filepath.Join(dir, "repo")
	change := mutatetest.MakeRepoFiles(t, repo, map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.22\n",
		"calc/calc.go":      calcBase,
		"calc/calc_test.go": calcTestBase,
	}, map[string]string{
		"calc/calc.go":       calcHead,
		"calc/calc_test.go":  calcTestHead,
		"calc/flaky_test.go": flakyTest,
	})
	cache := filepath.Join(dir, "cache")
	rep, err := runGo(context.Background(), host.New(), repo, change, mutate.Options{Workers: 2, CacheDir: cache}, verify.NoProgress{})
	if err != nil {
		calc.err = fmt.Errorf("Run: %w", err)
		t.Fatal(calc.err)
	}
	*calc = calcRun{dir: repo, change: change, cache: cache, rep: rep}
	return calc
}

func find(t *testing.T, rep *mutate.Report, line int, op, mutated string) mutate.Mutant {
	t.Helper()
	for _, m := range rep.Mutants {
		if m.Line == line && m.Operator == op && m.Mutated == mutated {
			return m
		}
	}
	var got []string
	for _, m := range rep.Mutants {
		got = append(got, m.File+":"+itoa(m.Line)+" "+m.Operator+" "+m.Mutated+" "+string(m.Verdict))
	}
	t.Fatalf("no %s mutant %q at line %d; have:\n%s", op, mutated, line, strings.Join(got, "\n"))
	return mutate.Mutant{}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestBoundaryNotPinnedSurvives(t *testing.T) {
	c := calcReport(t)
	line := mutatetest.LineOf(t, calcHead, "func SmallA") + 1
	m := find(t, c.rep, line, mutate.OpConditionalBoundary, "n < 10")
	if m.Verdict != mutate.Survived {
		t.Fatalf("n <= 10 -> n < 10 in SmallA: verdict %s (%s), want survived", m.Verdict, m.Detail)
	}
	if m.File != "calc/calc.go" || m.Col != 9 || m.EndCol != 16 || m.Original != "n <= 10" {
		t.Errorf("reported at %s:%d:%d-%d %q, want calc/calc.go:%d:9-16 \"n <= 10\"", m.File, m.Line, m.Col, m.EndCol, m.Original, line)
	}
	if strings.Join(m.Tests, ",") != "TestSmallA" {
		t.Errorf("tests run against it: %v, want only the covering TestSmallA", m.Tests)
	}
	if !m.Schema {
		t.Errorf("a plain comparison should run from the schema binary")
	}
	// The negation is caught by the same weak test.
	if n := find(t, c.rep, line, mutate.OpRelationalNegation, "n > 10"); n.Verdict != mutate.Killed || n.KilledBy != "TestSmallA" {
		t.Errorf("n > 10: %s by %q, want killed by TestSmallA", n.Verdict, n.KilledBy)
	}
	var buf bytes.Buffer
	if err := mutate.WriteText(&buf, c.rep); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, "Surviving mutants") || !strings.Contains(out, "calc/calc.go:"+itoa(line)+":9  conditional_boundary  n <= 10  →  n < 10") {
		t.Errorf("human summary does not list the survivor first with file:line and texts:\n%s", out)
	}
}

func TestBoundaryPinnedIsKilledByThatTest(t *testing.T) {
	c := calcReport(t)
	line := mutatetest.LineOf(t, calcHead, "func SmallB") + 1
	m := find(t, c.rep, line, mutate.OpConditionalBoundary, "n < 10")
	if m.Verdict != mutate.Killed || m.KilledBy != "TestSmallBBoundary" {
		t.Fatalf("n < 10 in SmallB: %s by %q, want killed by TestSmallBBoundary", m.Verdict, m.KilledBy)
	}
}

func TestUncoveredBranch(t *testing.T) {
	c := calcReport(t)
	line := mutatetest.LineOf(t, calcHead, "n < -1000")
	m := find(t, c.rep, line, mutate.OpConditionalBoundary, "n <= -1000")
	if m.Verdict != mutate.NotCovered || len(m.Tests) != 0 {
		t.Fatalf("inner branch: %s with tests %v, want not_covered", m.Verdict, m.Tests)
	}
	outer := find(t, c.rep, mutatetest.LineOf(t, calcHead, "if n < 0"), mutate.OpRelationalNegation, "n >= 0")
	if outer.Verdict != mutate.Killed {
		t.Errorf("covered outer condition: %s, want killed", outer.Verdict)
	}
}

func TestPrunedByTypes(t *testing.T) {
	c := calcReport(t)
	want := map[string]string{
		// untyped-constant folding: limit > 5 and limit >= 5 are both true.
		"limit >= 5": "cannot differ",
		// an unsigned value cannot be compared with -1.
		"-1": "cannot build",
	}
	for _, p := range c.rep.Pruned {
		for mut, why := range want {
			if p.Mutated == mut && strings.HasPrefix(p.Detail, why) {
				delete(want, mut)
			}
		}
		if p.Verdict != mutate.Pruned {
			t.Errorf("pruned mutant %s has verdict %s", p.ID, p.Verdict)
		}
	}
	for mut, why := range want {
		t.Errorf("expected %q to be pruned (%s); pruned: %+v", mut, why, c.rep.Pruned)
	}
	// x > -1 is x >= 0 on integers: a duplicate, dropped.
	bits := mutatetest.LineOf(t, calcHead, "for x > 0")
	for _, m := range c.rep.Mutants {
		if m.Line == bits && m.Operator == mutate.OpConstantBound && m.Mutated == "-1" {
			t.Errorf("x > -1 duplicates the boundary mutant and should be pruned")
		}
	}
	if c.rep.Stats.Pruned != len(c.rep.Pruned) || c.rep.Stats.Generated != len(c.rep.Pruned)+len(c.rep.Mutants) {
		t.Errorf("stats: generated %d pruned %d, report has %d pruned %d mutants", c.rep.Stats.Generated, c.rep.Stats.Pruned, len(c.rep.Pruned), len(c.rep.Mutants))
	}
	// A constant condition the schema cannot express still runs, alone.
	neg := find(t, c.rep, bits, mutate.OpRelationalNegation, "limit <= 5")
	if neg.Schema || neg.Verdict != mutate.Killed {
		t.Errorf("limit <= 5: schema=%v verdict=%s, want the overlay fallback to kill it", neg.Schema, neg.Verdict)
	}
}

func TestInfiniteLoopTimesOut(t *testing.T) {
	c := calcReport(t)
	m := find(t, c.rep, mutatetest.LineOf(t, calcHead, "for x > 0"), mutate.OpConditionalBoundary, "x >= 0")
	if m.Verdict != mutate.Timeout || m.KilledBy != "" {
		t.Fatalf("x >= 0 loops forever: %s (killed by %q), want timeout and not killed", m.Verdict, m.KilledBy)
	}
	if c.rep.Stats.Verdicts[mutate.Killed] == 0 || c.rep.Stats.Verdicts[mutate.Timeout] != 1 {
		t.Errorf("verdict counts %v", c.rep.Stats.Verdicts)
	}
}

func TestSuppression(t *testing.T) {
	c := calcReport(t)
	pos := mutatetest.LineOf(t, calcHead, "return u >= 0")
	m := find(t, c.rep, pos, mutate.OpConditionalBoundary, "u > 0")
	if m.Verdict != mutate.Ignored || !strings.HasPrefix(m.IgnoreReason, "always true for unsigned") {
		t.Errorf("directive with a reason: %s %q, want ignored with its reason", m.Verdict, m.IgnoreReason)
	}
	last := mutatetest.LineOf(t, calcHead, "return s[len(s)-1]")
	var bare bool
	for _, e := range c.rep.Errors {
		if strings.Contains(e, "calc/calc.go:"+itoa(last)+":") && strings.Contains(e, "needs a reason") {
			bare = true
		}
	}
	if !bare {
		t.Errorf("a bare directive must be reported as an error; errors: %v", c.rep.Errors)
	}
	// ... and suppresses nothing: the index arithmetic still runs and is killed.
	a := find(t, c.rep, last, mutate.OpArithIndex, "len(s)+1")
	if a.Verdict != mutate.Killed || a.IgnoreReason != "" {
		t.Errorf("len(s)-1 -> len(s)+1 under a bare directive: %s, want killed", a.Verdict)
	}
}

func TestFlakyBaselineQuarantined(t *testing.T) {
	c := calcReport(t)
	if strings.Join(c.rep.Quarantined, ",") != "calc:TestFlaky" {
		t.Fatalf("quarantined %v, want [calc:TestFlaky]", c.rep.Quarantined)
	}
	for _, m := range c.rep.Mutants {
		for _, tn := range m.Tests {
			if tn == "TestFlaky" {
				t.Fatalf("quarantined test ran against mutant %s", m.ID)
			}
		}
	}
}

func TestOnlyChangedLines(t *testing.T) {
	c := calcReport(t)
	old := mutatetest.LineOf(t, calcHead, "func Old")
	for _, m := range append(append([]mutate.Mutant(nil), c.rep.Mutants...), c.rep.Pruned...) {
		if m.Line == old || strings.HasSuffix(m.File, "_test.go") {
			t.Errorf("mutant %s at %s:%d is not on a changed line of a non-test file", m.ID, m.File, m.Line)
		}
	}
	// Every operator of the issue appears.
	ops := map[string]bool{}
	for _, m := range c.rep.Mutants {
		ops[m.Operator] = true
	}
	for _, op := range []string{mutate.OpConditionalBoundary, mutate.OpRelationalNegation, mutate.OpConditionNegation, mutate.OpConstantBound, mutate.OpArithIndex, mutate.OpBoolLiteral} {
		if !ops[op] {
			t.Errorf("no %s mutant generated", op)
		}
	}
	for _, m := range c.rep.Mutants {
		if m.Verdict == "" {
			t.Errorf("mutant %s has no verdict", m.ID)
		}
	}
}

// The schema binary and one build per mutant must agree on every verdict:
// the schema is only an optimisation.
func TestSchemaAgreesWithOverlay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every mutant separately")
	}
	c := calcReport(t)
	rep, err := runGo(context.Background(), host.New(), c.dir, c.change, mutate.Options{Workers: 2, CacheDir: c.cache, Overlay: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stats.BaselineCached != 1 {
		t.Errorf("second run did not use the cached baseline (cached %d)", rep.Stats.BaselineCached)
	}
	byID := map[string]mutate.Mutant{}
	for _, m := range rep.Mutants {
		byID[m.ID] = m
		if m.Schema {
			t.Errorf("Overlay option: mutant %s ran from a schema", m.ID)
		}
	}
	if len(rep.Mutants) != len(c.rep.Mutants) {
		t.Fatalf("overlay run has %d mutants, schema run %d", len(rep.Mutants), len(c.rep.Mutants))
	}
	for _, m := range c.rep.Mutants {
		o, ok := byID[m.ID]
		if !ok {
			t.Errorf("mutant %s missing from the overlay run", m.ID)
			continue
		}
		if o.Verdict != m.Verdict {
			t.Errorf("%s:%d %s %q: schema says %s, overlay says %s (%s)", m.File, m.Line, m.Operator, m.Mutated, m.Verdict, o.Verdict, o.Detail)
		}
	}
}

func TestSARIFStructure(t *testing.T) {
	c := calcReport(t)
	var buf bytes.Buffer
	if err := mutate.WriteSARIF(&buf, c.rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID               string          `json:"id"`
						ShortDescription json.RawMessage `json:"shortDescription"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex *int   `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine, StartColumn, EndLine, EndColumn int
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				Fingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("SARIF is not JSON: %v", err)
	}
	if doc.Version != "2.1.0" || doc.Schema == "" || len(doc.Runs) != 1 || doc.Runs[0].Tool.Driver.Name == "" {
		t.Fatalf("SARIF header: version %q schema %q runs %d", doc.Version, doc.Schema, len(doc.Runs))
	}
	run := doc.Runs[0]
	survivors := len(c.rep.Survivors())
	warnings := 0
	for _, r := range run.Results {
		if r.RuleID == "" || r.Message.Text == "" || len(r.Locations) != 1 || r.RuleIndex == nil {
			t.Fatalf("result missing required keys: %+v", r)
		}
		if run.Tool.Driver.Rules[*r.RuleIndex].ID != r.RuleID {
			t.Errorf("ruleIndex %d does not point at rule %s", *r.RuleIndex, r.RuleID)
		}
		reg := r.Locations[0].PhysicalLocation.Region
		if r.Locations[0].PhysicalLocation.ArtifactLocation.URI != "calc/calc.go" || reg.StartLine < 1 || reg.StartColumn < 1 || reg.EndColumn < 1 {
			t.Errorf("bad location %+v", r.Locations[0])
		}
		if r.Fingerprints["bcodeMutantId/v1"] == "" {
			t.Errorf("result without the mutant ID fingerprint")
		}
		if r.Level == "warning" {
			warnings++
		}
	}
	if warnings != survivors || survivors == 0 {
		t.Errorf("%d warnings for %d survivors", warnings, survivors)
	}
}

func TestGitHubAndMutationReport(t *testing.T) {
	c := calcReport(t)
	var gh bytes.Buffer
	if err := mutate.WriteGitHub(&gh, c.rep); err != nil {
		t.Fatal(err)
	}
	line := mutatetest.LineOf(t, calcHead, "func SmallA") + 1
	want := "::warning file=calc/calc.go,line=" + itoa(line) + ",col=9,endLine=" + itoa(line) + ",endColumn=16,title=bcode%3A survived mutant conditional_boundary::"
	if !strings.Contains(gh.String(), want) {
		t.Errorf("GitHub annotations lack %q:\n%s", want, gh.String())
	}
	var mr bytes.Buffer
	if err := mutate.WriteMutationReport(&mr, c.rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion string         `json:"schemaVersion"`
		Thresholds    map[string]int `json:"thresholds"`
		Files         map[string]struct {
			Language string `json:"language"`
			Source   string `json:"source"`
			Mutants  []struct {
				ID, MutatorName, Status string
				Location                struct{ Start, End struct{ Line, Column int } }
			} `json:"mutants"`
		} `json:"files"`
	}
	if err := json.Unmarshal(mr.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	f, ok := doc.Files["calc/calc.go"]
	if doc.SchemaVersion != "1" || doc.Thresholds["high"] == 0 || !ok || f.Language != "go" || f.Source != calcHead || len(f.Mutants) != len(c.rep.Mutants) {
		t.Fatalf("mutation report: version %q thresholds %v file ok=%v mutants %d", doc.SchemaVersion, doc.Thresholds, ok, len(f.Mutants))
	}
	valid := map[string]bool{"Killed": true, "Survived": true, "NoCoverage": true, "CompileError": true, "RuntimeError": true, "Timeout": true, "Ignored": true, "Pending": true}
	for _, m := range f.Mutants {
		if m.ID == "" || m.MutatorName == "" || !valid[m.Status] || m.Location.Start.Line < 1 || m.Location.Start.Column < 1 {
			t.Errorf("invalid mutant entry %+v", m)
		}
	}
	// Tests are keyed by the file that declares them, with its source:
	// Stryker's viewer shows a key as a file.
	var tdoc struct {
		TestFiles map[string]struct {
			Source string
			Tests  []struct{ ID, Name string }
		} `json:"testFiles"`
	}
	if err := json.Unmarshal(mr.Bytes(), &tdoc); err != nil {
		t.Fatal(err)
	}
	tf, ok := tdoc.TestFiles["calc/calc_test.go"]
	if !ok || !strings.Contains(tf.Source, "func Test") || len(tf.Tests) == 0 || len(tdoc.TestFiles) != 1 {
		t.Errorf("testFiles: want calc/calc_test.go with its source and tests, got keys %v", keys(tdoc.TestFiles))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestGitHubAnnotationCap: GitHub shows ten annotations of a kind per step
// and drops the rest silently, so mutate.WriteGitHub stops at ten of each, says
// how many it left out, and the step summary lists every mutant.
func TestJSONRoundTrip(t *testing.T) {
	c := calcReport(t)
	var buf bytes.Buffer
	if err := mutate.WriteJSON(&buf, c.rep); err != nil {
		t.Fatal(err)
	}
	var back mutate.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Mutants) != len(c.rep.Mutants) || back.Stats.Verdicts[mutate.Survived] != c.rep.Stats.Verdicts[mutate.Survived] {
		t.Errorf("JSON lost data")
	}
	if c.rep.Stats.Wall <= 0 || c.rep.Stats.MutantsPerMinute <= 0 || c.rep.Stats.SchemaMutants == 0 {
		t.Errorf("stats not filled: %+v", c.rep.Stats)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tempDir != "" {
		_ = os.RemoveAll(tempDir)
	}
	os.Exit(code)
}

// --reach mutates what the change's tests cover even off the changed
// lines: restricted to no changed file, only the covered, unchanged Old
// function is mutated.
func TestReachMutatesCoveredFunctions(t *testing.T) {
	c := calcReport(t)
	rep, err := runGo(context.Background(), host.New(), c.dir, c.change, mutate.Options{
		Workers: 2, CacheDir: c.cache, Reach: true,
		Files: []string{"calc/none.go"},
		Tests: []verify.Test{{Language: "go", Package: "./calc", File: "calc/calc_test.go", Name: "TestOld"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := mutatetest.LineOf(t, calcHead, "func Old")
	if len(rep.Mutants) == 0 {
		t.Fatalf("no mutants from --reach")
	}
	for _, m := range rep.Mutants {
		if m.Line != old || m.Func != "Old" {
			t.Errorf("--reach mutated %s:%d (%s), want only Old at line %d", m.File, m.Line, m.Func, old)
		}
	}
	if m := find(t, rep, old, mutate.OpRelationalNegation, "n <= 3"); m.Verdict != mutate.Killed || m.KilledBy != "TestOld" {
		t.Errorf("n <= 3 in Old: %s by %q, want killed by TestOld", m.Verdict, m.KilledBy)
	}
}

// slowStart is a runner whose mutant runs (the commands with a CPU limit)
// take delay to start, as a container's create and start do on a loaded
// machine: the delay is inside the command, so its mutate.Timeout covers it.
type slowStart struct {
	sandbox.Runner
	delay time.Duration
}

func (r slowStart) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	if c.CPULimit > 0 {
		c.Args = append([]string{"sh", "-c", fmt.Sprintf(`sleep %g; exec "$@"`, r.delay.Seconds()), "slow-start"}, c.Args...)
	}
	return r.Runner.Run(ctx, c)
}

// TestVerdictsDoNotChangeWithASlowStart: the calc change's mutants get the
// same verdicts when every mutant run waits 3 s before its tests start (a
// loaded machine's container start). With a wall-clock budget of ten times
// the tests' baseline time plus 2 s, each of them timed out; a budget in
// CPU time is not spent by waiting, and the one mutant that loops forever
// still times out by using its CPU time.
func TestVerdictsDoNotChangeWithASlowStart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every mutant of the calc change again, each 3 s late")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the host runner sets CPU limits on Linux only")
	}
	c := calcReport(t)
	// Another runner type keeps no baseline of the host's (the cache key
	// names it), so the baseline runs again: TestFlaky, which passes only
	// where its marker is missing, must again pass in one of its two runs.
	if err := os.Remove(filepath.Join(c.dir, "flaky.marker")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	rep, err := runGo(context.Background(), slowStart{host.New(), 3 * time.Second}, c.dir, c.change, mutate.Options{Workers: 2, CacheDir: c.cache}, verify.NoProgress{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]mutate.Verdict{}
	for _, m := range c.rep.Mutants {
		want[m.ID] = m.Verdict
	}
	for _, m := range rep.Mutants {
		if w, ok := want[m.ID]; !ok || w != m.Verdict {
			t.Errorf("%s (%s → %s, line %d): %s after a slow start, %s before (%s)", m.ID, m.Original, m.Mutated, m.Line, m.Verdict, w, m.Detail)
		}
		if m.Verdict == mutate.Timeout && !strings.Contains(m.Detail, "of CPU time") {
			t.Errorf("%s timed out by the wall clock, not its CPU time: %s", m.ID, m.Detail)
		}
	}
	if len(rep.Mutants) != len(c.rep.Mutants) {
		t.Errorf("%d mutants after a slow start, %d before", len(rep.Mutants), len(c.rep.Mutants))
	}
}
