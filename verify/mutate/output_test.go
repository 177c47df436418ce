package mutate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// The annotations stop at GitHub's cap and say how many more there were;
// the step summary lists every mutant, survivors first.
func TestGitHubAnnotationCap(t *testing.T) {
	rep := &Report{Stats: Stats{Verdicts: map[Verdict]int{}}}
	for i := 0; i < 14; i++ {
		for _, v := range []Verdict{Survived, NotCovered, Killed} {
			rep.Mutants = append(rep.Mutants, Mutant{ID: fmt.Sprintf("%016x", i*3+len(v)), File: "a/a.go", Line: i + 1, Col: 2, EndLine: i + 1, EndCol: 3,
				Operator: "conditional_boundary", Original: "<", Mutated: "<=", Verdict: v})
			rep.Stats.Verdicts[v]++
		}
	}
	var gh bytes.Buffer
	if err := WriteGitHub(&gh, rep); err != nil {
		t.Fatal(err)
	}
	out := gh.String()
	if n := strings.Count(out, "::warning "); n != GitHubAnnotationLimit {
		t.Errorf("%d warnings, want %d", n, GitHubAnnotationLimit)
	}
	if n := strings.Count(out, "::notice "); n != GitHubAnnotationLimit {
		t.Errorf("%d notices, want %d", n, GitHubAnnotationLimit)
	}
	for _, want := range []string{"bcode: 4 more warnings not annotated", "bcode: 4 more notices not annotated", "file=a/a.go,line=1,"} {
		if !strings.Contains(out, want) {
			t.Errorf("annotations lack %q:\n%s", want, out)
		}
	}
	var sum bytes.Buffer
	if err := WriteGitHubSummary(&sum, rep); err != nil {
		t.Fatal(err)
	}
	s := sum.String()
	if !strings.Contains(s, "42 mutants: 14 survived, 14 not covered, 14 killed.") {
		t.Errorf("summary counts wrong:\n%s", s)
	}
	if n := strings.Count(s, "| survived |"); n != 14 {
		t.Errorf("summary lists %d survivors, want 14", n)
	}
	if n := strings.Count(s, "| not covered |"); n != 14 {
		t.Errorf("summary lists %d uncovered, want 14", n)
	}
	if strings.Index(s, "| not covered |") < strings.LastIndex(s, "| survived |") {
		t.Errorf("survivors are not listed first:\n%s", s)
	}
}
