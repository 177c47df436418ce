// Package mutatetest is the conformance suite of mutation engines
// (mutate.Engine): every engine passes Run with a fixture of its language,
// a small real repository whose change has a mutant of each kind the suite
// checks. The suite knows nothing of a language beyond its fixture.
package mutatetest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// Fixture is a repository of one engine's language: Base is committed,
// then Head (the files it changes) over it, and the suite mutates the
// change. Every Site is on a line Head changes, except Unchanged.
type Fixture struct {
	// Base and Head are txtar archives.
	Base, Head string
	// Options are the runs' options beside the suite's own (Engines,
	// Workers, CacheDir, TempDir): an interpreter, say.
	Options mutate.Options
	// Require skips (or fails) the test when the engine's toolchain is
	// missing.
	Require func(t *testing.T)
	// Unchanged is a line Base had, with code the engine mutates, that the
	// change did not touch: no mutant may be on it.
	Unchanged Site
	// Survivor is a boundary mutant no test kills; Covering are tests
	// that cover it, named as the engine names tests.
	Survivor Site
	Covering []string
	// Killed is a mutant the test Killer kills; Killer is as the
	// language's gate adapter reports it, and the gate credits the kill.
	Killed Site
	Killer verify.Test
	// Loop is a mutant that loops forever. It comes before other mutants
	// of its file, which must still get verdicts.
	Loop Site
	// Crash is a mutant whose run kills the test process itself (the
	// process dies; no test reports a failure).
	Crash Site
}

// Site is a mutant of a fixture: its file, a text of its line (the first
// line of the file in Head that contains it) and its mutated text.
type Site struct {
	File, Line, Mutated string
}

// Run runs the suite against e with f: only changed lines are mutated; a
// boundary mutant no test kills survives with its covering tests; a mutant
// a test kills is killed by it, and the gate credits that test; an infinite loop is a timeout and the
// mutants after it still get verdicts; a crash is never a kill; IDs are the
// same in two runs; a cancelled run stops with an error and leaves nothing
// in its temporary directory.
func Run(t *testing.T, e mutate.Engine, f Fixture) {
	testenv.Git(t)
	if f.Require != nil {
		f.Require(t)
	}
	dir := t.TempDir()
	change := MakeRepo(t, dir, f.Base, f.Head)
	head := headFiles(t, f.Head)
	first := newRun(t, e, f, dir, change)
	t.Run("OnlyChangedLines", func(t *testing.T) { onlyChangedLines(t, first.rep, change, head, f) })
	t.Run("SurvivorCarriesItsTests", func(t *testing.T) { survivor(t, first.rep, head, f) })
	t.Run("KilledByItsTest", func(t *testing.T) { killed(t, e, first.rep, head, f) })
	t.Run("LoopTimesOut", func(t *testing.T) { loop(t, first.rep, head, f) })
	t.Run("CrashIsNoKill", func(t *testing.T) { crash(t, first.rep, head, f) })
	t.Run("NothingLeft", func(t *testing.T) { empty(t, first.tmp) })
	t.Run("IDsDeterministic", func(t *testing.T) {
		again := newRun(t, e, f, dir, change)
		sameIDs(t, first.rep, again.rep)
	})
	t.Run("CancelStops", func(t *testing.T) { cancelled(t, e, f, dir, change, first.commands) })
}

// run is one mutate.Run of a fixture.
type run struct {
	rep      *mutate.Report
	tmp      string // its Options.TempDir
	commands int64  // commands it gave the runner
}

// options are f's with the suite's: e alone, one worker (so "later"
// mutants are later), a cache and a temporary directory of the test's.
func options(t *testing.T, e mutate.Engine, f Fixture) mutate.Options {
	o := f.Options
	o.Engines = []mutate.Engine{e}
	o.Workers = 1
	o.CacheDir = t.TempDir()
	o.TempDir = t.TempDir()
	return o
}

func newRun(t *testing.T, e mutate.Engine, f Fixture, dir string, change *verify.Change) run {
	t.Helper()
	o := options(t, e, f)
	r := &counting{Runner: host.New()}
	rep, err := mutate.Run(context.Background(), r, dir, change, o, verify.NoProgress{})
	if err != nil {
		t.Fatalf("mutate.Run: %v", err)
	}
	if len(rep.Mutants) == 0 {
		t.Fatal("the fixture's change has no mutants")
	}
	return run{rep: rep, tmp: o.TempDir, commands: r.n.Load()}
}

// counting counts the commands it runs and, once it has started at, calls
// cancel.
type counting struct {
	sandbox.Runner
	n      atomic.Int64
	at     int64
	cancel context.CancelFunc
	once   sync.Once
}

func (c *counting) Run(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	if n := c.n.Add(1); c.cancel != nil && n >= c.at {
		c.once.Do(c.cancel)
	}
	return c.Runner.Run(ctx, cmd)
}

func onlyChangedLines(t *testing.T, rep *mutate.Report, change *verify.Change, head map[string]string, f Fixture) {
	changed := map[string][]verify.LineRange{}
	for _, fc := range change.Files {
		changed[fc.Path] = fc.Changed
	}
	unchanged := lineOf(t, head, f.Unchanged)
	for _, m := range append(append([]mutate.Mutant(nil), rep.Mutants...), rep.Pruned...) {
		if !overlaps(changed[m.File], m.Line, m.EndLine) {
			t.Errorf("%s:%d (%s → %s) is not on a changed line", m.File, m.Line, m.Original, m.Mutated)
		}
		if m.File == f.Unchanged.File && m.Line <= unchanged && unchanged <= m.EndLine {
			t.Errorf("%s:%d, unchanged, has a mutant: %s → %s", m.File, m.Line, m.Original, m.Mutated)
		}
	}
}

func overlaps(rs []verify.LineRange, from, to int) bool {
	for _, r := range rs {
		if from <= r.End && r.Start <= to {
			return true
		}
	}
	return false
}

func survivor(t *testing.T, rep *mutate.Report, head map[string]string, f Fixture) {
	m := find(t, rep, head, f.Survivor)
	if m.Verdict != mutate.Survived || m.KilledBy != "" {
		t.Errorf("%s → %s: %s (killed by %q, %s), want survived", m.Original, m.Mutated, m.Verdict, m.KilledBy, m.Detail)
	}
	for _, want := range f.Covering {
		if !contains(m.Tests, want) {
			t.Errorf("%s → %s: covering tests %q lack %q", m.Original, m.Mutated, m.Tests, want)
		}
	}
}

func killed(t *testing.T, e mutate.Engine, rep *mutate.Report, head map[string]string, f Fixture) {
	m := find(t, rep, head, f.Killed)
	want := e.KillerName(f.Killer)
	if m.Verdict != mutate.Killed || m.KilledBy != want {
		t.Errorf("%s → %s: %s by %q (%s), want killed by %q", m.Original, m.Mutated, m.Verdict, m.KilledBy, m.Detail, want)
	}
	if sum := mutate.Summarize(rep, []verify.Test{f.Killer}, []mutate.Engine{e}); sum.CreditedKills == 0 {
		t.Errorf("the gate credits %s with no kill", want)
	}
}

func loop(t *testing.T, rep *mutate.Report, head map[string]string, f Fixture) {
	m := find(t, rep, head, f.Loop)
	if m.Verdict != mutate.Timeout || m.KilledBy != "" {
		t.Errorf("%s → %s: %s by %q (%s), want a timeout", m.Original, m.Mutated, m.Verdict, m.KilledBy, m.Detail)
	}
	crash := find(t, rep, head, f.Crash)
	for _, o := range rep.Mutants {
		if o.ID != crash.ID && o.Verdict == mutate.NoVerdict {
			t.Errorf("%s:%d (%s → %s) got no verdict: %s", o.File, o.Line, o.Original, o.Mutated, o.Detail)
		}
	}
}

func crash(t *testing.T, rep *mutate.Report, head map[string]string, f Fixture) {
	m := find(t, rep, head, f.Crash)
	if m.Verdict == mutate.Killed || m.KilledBy != "" {
		t.Errorf("%s → %s: %s by %q (%s): a crash is not a kill", m.Original, m.Mutated, m.Verdict, m.KilledBy, m.Detail)
	}
}

func sameIDs(t *testing.T, a, b *mutate.Report) {
	ids := func(rep *mutate.Report) []string {
		var out []string
		seen := map[string]bool{}
		for _, m := range append(append([]mutate.Mutant(nil), rep.Mutants...), rep.Pruned...) {
			if seen[m.ID] {
				t.Errorf("two mutants have the ID %s", m.ID)
			}
			seen[m.ID] = true
			out = append(out, fmt.Sprintf("%s %s:%d %s → %s", m.ID, m.File, m.Line, m.Original, m.Mutated))
		}
		sort.Strings(out)
		return out
	}
	x, y := ids(a), ids(b)
	if strings.Join(x, "\n") != strings.Join(y, "\n") {
		t.Errorf("the IDs of two runs differ:\n%s\nand\n%s", strings.Join(x, "\n"), strings.Join(y, "\n"))
	}
}

// cancelled runs the fixture again, cancelled half-way through the
// commands a whole run gave the runner, and once more when its last
// command starts (for an engine with few commands, one running mutants).
func cancelled(t *testing.T, e mutate.Engine, f Fixture, dir string, change *verify.Change, commands int64) {
	for _, at := range []int64{max(commands/2, 1), commands} {
		o := options(t, e, f)
		ctx, cancel := context.WithCancel(context.Background())
		r := &counting{Runner: host.New(), at: at, cancel: cancel}
		rep, err := mutate.Run(ctx, r, dir, change, o, verify.NoProgress{})
		switch {
		case err == nil && r.n.Load() < at && at == commands && at > 1:
			// An engine may need fewer commands on another run (workers
			// started beside a baseline depend on the idle CPUs): this
			// run ended before the command that would have cancelled it.
			t.Logf("the run needed %d commands, not %d: not cancelled", r.n.Load(), at)
		case err == nil:
			t.Errorf("a run cancelled at command %d of %d ended without an error (%d mutants)", at, commands, len(rep.Mutants))
		case ctx.Err() == nil:
			t.Errorf("the run ended (%v) before its command %d of %d", err, at, commands)
		default:
			t.Logf("cancelled at command %d of %d: %v", at, commands, err)
		}
		cancel()
		empty(t, o.TempDir)
	}
}

// empty fails when the run left anything in dir, its Options.TempDir.
func empty(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the run left %s in its temporary directory", e.Name())
	}
}

func find(t *testing.T, rep *mutate.Report, head map[string]string, s Site) mutate.Mutant {
	t.Helper()
	line := lineOf(t, head, s)
	for _, m := range rep.Mutants {
		if m.File == s.File && m.Line == line && m.Mutated == s.Mutated {
			return m
		}
	}
	var have []string
	for _, m := range rep.Mutants {
		have = append(have, fmt.Sprintf("%s:%d %s → %s: %s", m.File, m.Line, m.Original, m.Mutated, m.Verdict))
	}
	t.Fatalf("no mutant %q at %s:%d; have:\n%s", s.Mutated, s.File, line, strings.Join(have, "\n"))
	return mutate.Mutant{}
}

// lineOf is the 1-based line of s in its file in Head.
func lineOf(t *testing.T, head map[string]string, s Site) int {
	t.Helper()
	src, ok := head[s.File]
	if !ok {
		t.Fatalf("the fixture's Head has no %s", s.File)
	}
	return LineOf(t, src, s.Line)
}

// LineOf is the 1-based line of the first line of content holding s; the
// test fails when none does.
func LineOf(t testing.TB, content, s string) int {
	t.Helper()
	for i, l := range strings.Split(content, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q is in no line of the source", s)
	return 0
}

// headFiles are the files of the archive head by path.
func headFiles(t *testing.T, head string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, f := range txtar.Parse([]byte(head)).Files {
		files[f.Name] = string(f.Data)
	}
	return files
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// MakeRepo commits base, then head over it (txtar archives), in a new
// repository in dir, and returns the change between them.
func MakeRepo(t testing.TB, dir, base, head string) *verify.Change {
	t.Helper()
	r := testrepo.Init(t, dir)
	r.WriteTxtar(base)
	r.Commit("base")
	r.WriteTxtar(head)
	r.Commit("head")
	return ChangeOf(t, dir, "HEAD~1", "HEAD")
}

// MakeRepoFiles is MakeRepo with the files as maps of path to content.
func MakeRepoFiles(t testing.TB, dir string, base, head map[string]string) *verify.Change {
	t.Helper()
	r := testrepo.Init(t, dir)
	r.Write(base)
	r.Commit("base")
	r.Write(head)
	r.Commit("head")
	return ChangeOf(t, dir, "HEAD~1", "HEAD")
}

var hunk = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// ChangeOf is the change from base to head in the repository in dir, its
// changed lines read from `git diff` (git's, not the test's).
func ChangeOf(t testing.TB, dir, base, head string) *verify.Change {
	t.Helper()
	ch := &verify.Change{Base: base, Head: head}
	out := testrepo.Open(t, dir).Git("diff", "-U0", "--no-renames", base, head)
	var cur *verify.FileChange
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "+++ "):
			name := strings.TrimPrefix(line, "+++ ")
			if name == "/dev/null" {
				cur = nil
				continue
			}
			ch.Files = append(ch.Files, verify.FileChange{Path: strings.TrimPrefix(name, "b/"), Status: verify.Modified})
			cur = &ch.Files[len(ch.Files)-1]
		case cur != nil && hunk.MatchString(line):
			g := hunk.FindStringSubmatch(line)
			start, _ := strconv.Atoi(g[1])
			n := 1
			if g[2] != "" {
				n, _ = strconv.Atoi(g[2])
			}
			if n > 0 {
				cur.Changed = append(cur.Changed, verify.LineRange{Start: start, End: start + n - 1})
			}
		}
	}
	return ch
}
