package app_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// TestWriteEvidence: every format's name parses back to it, and renders
// exactly what verify/mutate's writer of that format does.
func TestWriteEvidence(t *testing.T) {
	rep := &app.EvidenceReport{
		Mutants: []verify.Mutant{{File: "p/p.go", Line: 3, Col: 29, EndLine: 3, EndCol: 34, Operator: mutate.OpConditionalBoundary,
			Original: "x > 0", Mutated: "x >= 0", Verdict: verify.MutantSurvived}},
		Sources: map[string]string{"p/p.go": "package p\n\nfunc f(x int) bool { return x > 0 }\n"},
		Stats:   app.EvidenceStats{Verdicts: map[verify.MutantVerdict]int{verify.MutantSurvived: 1}},
	}
	writers := map[string]func(io.Writer, *mutate.Report) error{
		"text": mutate.WriteText, "json": mutate.WriteJSON, "sarif": mutate.WriteSARIF, "github": mutate.WriteGitHub,
		"github-summary": mutate.WriteGitHubSummary, "mutation-report": mutate.WriteMutationReport,
	}
	for name, write := range writers {
		f, err := app.ParseEvidenceFormat(name)
		if err != nil || string(f) != name {
			t.Errorf("ParseEvidenceFormat(%q) = %q, %v", name, f, err)
			continue
		}
		var got, want bytes.Buffer
		if err := app.WriteEvidence(&got, f, rep); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := write(&want, rep); err != nil {
			t.Fatalf("%s: mutate: %v", name, err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: WriteEvidence wrote\n%s\nwant\n%s", name, got.String(), want.String())
		}
	}
	if _, err := app.ParseEvidenceFormat("xml"); err == nil || !strings.Contains(err.Error(), `"xml"`) || !strings.Contains(err.Error(), "sarif") {
		t.Errorf("ParseEvidenceFormat(xml): %v; want an error naming it and the formats", err)
	}
	if err := app.WriteEvidence(io.Discard, "xml", rep); err == nil {
		t.Error("WriteEvidence(xml): no error")
	}
}
