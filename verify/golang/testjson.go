package golang

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"time"
)

// Event is one line of a `go test -json` (test2json) stream. Go 1.24 added
// build-output/build-fail events (ImportPath set, Package empty) and
// FailedBuild on the failing package's final event.
type Event struct {
	Time        time.Time `json:",omitempty"`
	Action      string
	Package     string  `json:",omitempty"`
	Test        string  `json:",omitempty"`
	Elapsed     float64 `json:",omitempty"`
	Output      string  `json:",omitempty"`
	FailedBuild string  `json:",omitempty"`
	ImportPath  string  `json:",omitempty"`
}

// Stream is a parsed `go test -json` stream.
type Stream struct {
	// Packages in the order they first appear.
	Packages []*PackageRun
	// BuildOutput is the compiler's output by ImportPath (as build-output
	// events name it), in order.
	BuildOutput map[string]string
	// BuildOrder lists BuildOutput's keys in the order they appeared.
	BuildOrder []string
	// Plain holds the lines that were not JSON events: older go commands
	// print build errors and go command failures as plain text.
	Plain []string
}

// PackageRun is what one package's test binary did.
type PackageRun struct {
	Package string
	// Action is the package's final action: "pass", "fail" or "skip" (no
	// test files); empty when the stream ended first.
	Action  string
	Elapsed time.Duration
	// FailedBuild names the package whose build failed, when the test
	// binary could not be built (Go 1.24+).
	FailedBuild string
	// Output is the output not attributed to any test, in order.
	Output string
	// Tests holds every run of every test in the order they started: with
	// -count=3 each test appears three times.
	Tests []*TestRun
	// TimedOut is set when the binary hit its -timeout ("panic: test timed
	// out after ...").
	TimedOut bool
}

// TestRun is one run of one test or subtest.
type TestRun struct {
	Name string
	// Action is "pass", "fail" or "skip"; empty when the run never ended
	// (the binary timed out, crashed or exited under it).
	Action  string
	Elapsed time.Duration
	Output  string
	// Start and End are the positions of the run's first and last events
	// in the stream, so nested runs (subtests) can be placed inside their
	// parent's run.
	Start, End int
	// Verdict, when set, overrides what the stream said (judgeEnds): the
	// run's report is altered, or its pass is not taken; Why says why.
	Verdict, Why string
}

// BuildFailed reports whether the package's test binary never ran because
// it (or something it imports) did not build, or the go command could not
// set it up (missing package, bad import path).
func (p *PackageRun) BuildFailed() bool {
	if p.Action != "fail" {
		return false
	}
	if p.FailedBuild != "" {
		return true
	}
	return strings.Contains(p.Output, "[build failed]") || strings.Contains(p.Output, "[setup failed]")
}

const timeoutMarker = "panic: test timed out after"

// ParseTestJSON reads a `go test -json` stream. Lines that are not JSON are
// kept in Plain; malformed or out-of-order events are tolerated, since the
// stream of a crashing test binary is cut off at arbitrary points. The
// error is only for failures to read r.
func ParseTestJSON(r io.Reader) (*Stream, error) {
	s := &Stream{BuildOutput: map[string]string{}}
	pkgs := map[string]*PackageRun{}
	open := map[string]map[string]*TestRun{} // package → test → unfinished run
	pkg := func(name string) *PackageRun {
		p := pkgs[name]
		if p == nil {
			p = &PackageRun{Package: name}
			pkgs[name] = p
			s.Packages = append(s.Packages, p)
			open[name] = map[string]*TestRun{}
		}
		return p
	}
	br := bufio.NewReader(r)
	for seq := 0; ; seq++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			s.handleLine(line, seq, pkg, open)
		}
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return s, err
		}
	}
}

func (s *Stream) handleLine(line []byte, seq int, pkg func(string) *PackageRun, open map[string]map[string]*TestRun) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return
	}
	var ev Event
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &ev) != nil || ev.Action == "" {
		s.Plain = append(s.Plain, strings.TrimRight(string(line), "\r\n"))
		return
	}
	switch ev.Action {
	case "build-output":
		if _, ok := s.BuildOutput[ev.ImportPath]; !ok {
			s.BuildOrder = append(s.BuildOrder, ev.ImportPath)
		}
		s.BuildOutput[ev.ImportPath] += ev.Output
		return
	case "build-fail":
		if _, ok := s.BuildOutput[ev.ImportPath]; !ok {
			s.BuildOrder = append(s.BuildOrder, ev.ImportPath)
			s.BuildOutput[ev.ImportPath] = ""
		}
		return
	}
	p := pkg(ev.Package)
	if strings.Contains(ev.Output, timeoutMarker) {
		p.TimedOut = true
	}
	if ev.Test == "" {
		switch ev.Action {
		case "output":
			p.Output += ev.Output
		case "pass", "fail", "skip":
			p.Action = ev.Action
			p.Elapsed = seconds(ev.Elapsed)
			if ev.FailedBuild != "" {
				p.FailedBuild = ev.FailedBuild
			}
		}
		return
	}
	runs := open[ev.Package]
	switch ev.Action {
	case "run":
		t := &TestRun{Name: ev.Test, Start: seq, End: seq}
		p.Tests = append(p.Tests, t)
		runs[ev.Test] = t
	case "output":
		t := runs[ev.Test]
		if t == nil {
			t = lastRun(p, ev.Test)
		}
		if t == nil {
			p.Output += ev.Output
			return
		}
		t.Output += ev.Output
		t.End = seq
	case "pass", "fail", "skip":
		t := runs[ev.Test]
		if t == nil {
			// A final event without a "run": count it as a run of its
			// own rather than drop a result.
			t = &TestRun{Name: ev.Test, Start: seq}
			p.Tests = append(p.Tests, t)
		}
		t.Action = ev.Action
		t.Elapsed = seconds(ev.Elapsed)
		t.End = seq
		delete(runs, ev.Test)
	default: // pause, cont, bench, start: nothing to keep
		if t := runs[ev.Test]; t != nil {
			t.End = seq
		}
	}
}

func lastRun(p *PackageRun, name string) *TestRun {
	for i := len(p.Tests) - 1; i >= 0; i-- {
		if p.Tests[i].Name == name {
			return p.Tests[i]
		}
	}
	return nil
}

// seconds converts test2json's Elapsed, guarding against values no real
// run produces.
func seconds(f float64) time.Duration {
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	if f > float64(math.MaxInt64/int64(time.Second)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f * float64(time.Second))
}

// Runs returns every run of the test named name, across packages, in order.
func (s *Stream) Runs(name string) []*TestRun {
	var out []*TestRun
	for _, p := range s.Packages {
		for _, t := range p.Tests {
			if t.Name == name {
				out = append(out, t)
			}
		}
	}
	return out
}

// BuildErrorText is the compiler output explaining why p did not build:
// the build-output of the package named by FailedBuild, else every
// build-output, else the plain-text lines of an older go command.
func (s *Stream) BuildErrorText(p *PackageRun) string {
	if p != nil && p.FailedBuild != "" {
		if out := s.BuildOutput[p.FailedBuild]; strings.TrimSpace(out) != "" {
			return out
		}
	}
	var b strings.Builder
	for _, k := range s.BuildOrder {
		b.WriteString(s.BuildOutput[k])
	}
	if strings.TrimSpace(b.String()) != "" {
		return b.String()
	}
	return strings.Join(s.Plain, "\n")
}
