package golang

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The streams under testdata/streams were recorded from go 1.26's
// `go test -json` (paths rewritten to /src); oldbuild.jsonl is the shape of
// a build failure from go 1.23 and older, with the compiler's plain-text
// errors mixed in.
func readStream(t *testing.T, name string) *Stream {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseTestJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func actions(runs []*TestRun) string {
	var out []string
	for _, r := range runs {
		a := r.Action
		if a == "" {
			a = "-"
		}
		out = append(out, a)
	}
	return strings.Join(out, ",")
}

func TestParseTestJSON(t *testing.T) {
	t.Run("count=2: every run kept in order", func(t *testing.T) {
		s := readStream(t, "count2.jsonl")
		if len(s.Packages) != 1 || s.Packages[0].Package != "example.com/m/a" || s.Packages[0].Action != "fail" {
			t.Fatalf("packages: %+v", s.Packages)
		}
		for name, want := range map[string]string{"TestPass": "pass,pass", "TestFail": "fail,fail", "TestSkip": "skip,skip", "ExampleHello": "pass"} {
			if got := actions(s.Runs(name)); got != want {
				t.Errorf("%s: %s, want %s", name, got, want)
			}
		}
		if out := s.Runs("TestFail")[0].Output; !strings.Contains(out, "want 1 got 2") {
			t.Errorf("failure output lost: %q", out)
		}
		if s.Packages[0].BuildFailed() || s.Packages[0].TimedOut {
			t.Error("a failing package is not a build failure or a timeout")
		}
	})
	t.Run("subtests are runs of their own, inside the parent's", func(t *testing.T) {
		s := readStream(t, "subtests.jsonl")
		parent, sub := s.Runs("TestSub"), s.Runs("TestSub/one_two")
		if actions(parent) != "fail" || actions(sub) != "pass" || actions(s.Runs("TestSub/bad")) != "fail" {
			t.Fatalf("parent %s, sub %s, bad %s", actions(parent), actions(sub), actions(s.Runs("TestSub/bad")))
		}
		if !containsRun(sub, parent[0]) {
			t.Errorf("subtest run %d..%d not inside parent %d..%d", sub[0].Start, sub[0].End, parent[0].Start, parent[0].End)
		}
	})
	t.Run("panic: a failed run with the panic in its output", func(t *testing.T) {
		s := readStream(t, "panic.jsonl")
		runs := s.Runs("TestPanic")
		if actions(runs) != "fail" || !strings.Contains(runs[0].Output, "assignment to entry in nil map") {
			t.Fatalf("%s %q", actions(runs), runs[0].Output)
		}
	})
	t.Run("timeout: the running test never ends, the package is marked", func(t *testing.T) {
		s := readStream(t, "timeout.jsonl")
		if !s.Packages[0].TimedOut {
			t.Fatal("timeout not detected")
		}
		if got := actions(s.Runs("TestSlow")); got != "-" {
			t.Errorf("TestSlow: %s, want an unfinished run", got)
		}
		if got := actions(s.Runs("TestPass")); got != "pass" {
			t.Errorf("TestPass: %s", got)
		}
	})
	t.Run("build failure (go 1.24+): FailedBuild names the compiler output", func(t *testing.T) {
		s := readStream(t, "buildfail.jsonl")
		p := s.Packages[0]
		if !p.BuildFailed() || !strings.Contains(s.BuildErrorText(p), "undefined: Missing") {
			t.Fatalf("build failure not found: %+v %q", p, s.BuildErrorText(p))
		}
	})
	t.Run("setup failure: a missing import", func(t *testing.T) {
		s := readStream(t, "setupfail.jsonl")
		p := s.Packages[0]
		if !p.BuildFailed() || !strings.Contains(s.BuildErrorText(p), "no required module provides package example.com/nonexist") {
			t.Fatalf("setup failure not found: %+v %q", p, s.BuildErrorText(p))
		}
	})
	t.Run("build failure (go 1.23 and older): plain text errors", func(t *testing.T) {
		s := readStream(t, "oldbuild.jsonl")
		p := s.Packages[0]
		if !p.BuildFailed() || !strings.Contains(s.BuildErrorText(p), "undefined: Missing") {
			t.Fatalf("old-style build failure not found: %+v %q", p, s.BuildErrorText(p))
		}
	})
	t.Run("garbage and truncation are tolerated", func(t *testing.T) {
		in := "not json\n{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestA\"}\n{\"Action\":\"output\",\"Package\":\"p\",\"Test\":\"TestA\",\"Output\":\"x\\n\"}\n{\"Action\":\"pa"
		s, err := ParseTestJSON(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if actions(s.Runs("TestA")) != "-" || len(s.Plain) != 2 {
			t.Fatalf("runs %s, plain %q", actions(s.Runs("TestA")), s.Plain)
		}
	})
	t.Run("elapsed", func(t *testing.T) {
		s, _ := ParseTestJSON(strings.NewReader(`{"Action":"pass","Package":"p","Test":"T","Elapsed":1.5}` + "\n" + `{"Action":"pass","Package":"p","Test":"U","Elapsed":1e300}`))
		if got := s.Runs("T")[0].Elapsed; got != 1500*time.Millisecond {
			t.Errorf("elapsed %s", got)
		}
		if got := s.Runs("U")[0].Elapsed; got <= 0 {
			t.Errorf("huge elapsed became %s", got)
		}
	})
}

// FuzzParseTestJSON checks that no stream, however cut or corrupted, makes
// the parser fail or produce runs it did not read, and that the runs it
// reports survive being written out again as a clean stream. The seed
// corpus in testdata/fuzz/FuzzParseTestJSON holds the recorded streams and
// their damaged variants.
func FuzzParseTestJSON(f *testing.F) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "streams"))
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join("testdata", "streams", e.Name())); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseTestJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("reading from memory failed: %v", err)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		total := 0
		for _, p := range s.Packages {
			for _, r := range p.Tests {
				total++
				switch r.Action {
				case "", "pass", "fail", "skip":
				default:
					t.Fatalf("run of %q has action %q", r.Name, r.Action)
				}
				if r.Start > r.End || r.Elapsed < 0 {
					t.Fatalf("run %+v: bad span or elapsed", r)
				}
			}
		}
		if total > lines || len(s.Plain) > lines {
			t.Fatalf("%d runs and %d plain lines from %d lines", total, len(s.Plain), lines)
		}
		again, err := ParseTestJSON(bytes.NewReader(canonical(s)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(summary(s), summary(again)) {
			t.Fatalf("runs changed when written out again:\n%v\n%v", summary(s), summary(again))
		}
	})
}

// canonical writes the runs of s as a stream with one run at a time.
func canonical(s *Stream) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, p := range s.Packages {
		for _, r := range p.Tests {
			_ = enc.Encode(Event{Action: "run", Package: p.Package, Test: r.Name})
			if r.Output != "" {
				_ = enc.Encode(Event{Action: "output", Package: p.Package, Test: r.Name, Output: r.Output})
			}
			if r.Action != "" {
				_ = enc.Encode(Event{Action: r.Action, Package: p.Package, Test: r.Name})
			}
		}
	}
	return b.Bytes()
}

func summary(s *Stream) []string {
	var out []string
	for _, p := range s.Packages {
		for _, r := range p.Tests {
			out = append(out, p.Package+"\x00"+r.Name+"\x00"+r.Action+"\x00"+r.Output)
		}
	}
	return out
}
