package mutate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/sandbox/shown/showntest"
)

// hostileReport has one surviving mutant per planted name (its file and
// its covering test), and one more whose tests are all of them.
func hostileReport(cs []showntest.Case) *Report {
	rep := &Report{Sources: map[string]string{}, Stats: Stats{Verdicts: map[Verdict]int{}}}
	all := make([]string, 0, len(cs))
	for i, c := range cs {
		all = append(all, c.Text)
		rep.Mutants = append(rep.Mutants, Mutant{ID: "m" + strings.Repeat("0", i%3), File: c.Text, Line: 1, Col: 1, EndLine: 1, EndCol: 2,
			Operator: OpBoolLiteral, Original: "true", Mutated: "false", Verdict: Survived, Tests: []string{c.Text}})
	}
	rep.Mutants = append(rep.Mutants, Mutant{ID: "all", File: "a.go", Line: 1, Col: 1, EndLine: 1, EndCol: 2,
		Operator: OpBoolLiteral, Original: "true", Mutated: "false", Verdict: Survived, Tests: all})
	rep.Stats.Verdicts[Survived] = len(rep.Mutants)
	return rep
}

// decodedStrings is every string of a JSON document, as a viewer renders
// them.
func decodedStrings(t *testing.T, doc []byte) []byte {
	t.Helper()
	if raw := showntest.Raw(doc); raw != nil {
		t.Errorf("raw hidden bytes in the JSON itself: %v", raw)
	}
	out, err := showntest.JSONStrings(doc)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return out
}

// TestRenderersShowAttacks runs the attack suite through every evidence
// renderer: the text summary, JSON, SARIF (whose URIs are percent-encoded),
// the mutation-testing report, GitHub annotations and the step summary.
func TestRenderersShowAttacks(t *testing.T) {
	names := showntest.Options{}
	decoded := showntest.Options{Shown: func(s string) string { return shown.Text(string([]rune(s))) }, Lines: true}
	render := func(t *testing.T, write func(*bytes.Buffer, *Report) error, cs []showntest.Case) []byte {
		var buf bytes.Buffer
		if err := write(&buf, hostileReport(cs)); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, p := range []struct {
		name string
		opts showntest.Options
		out  func(t *testing.T, cs []showntest.Case) []byte
	}{
		{"text", names, func(t *testing.T, cs []showntest.Case) []byte {
			return render(t, func(b *bytes.Buffer, r *Report) error { return WriteText(b, r) }, cs)
		}},
		{"json", decoded, func(t *testing.T, cs []showntest.Case) []byte {
			return decodedStrings(t, render(t, func(b *bytes.Buffer, r *Report) error { return WriteJSON(b, r) }, cs))
		}},
		{"sarif", decoded, func(t *testing.T, cs []showntest.Case) []byte {
			doc := render(t, func(b *bytes.Buffer, r *Report) error { return WriteSARIF(b, r) }, cs)
			var d struct {
				Runs []struct {
					Results []struct {
						Locations []struct {
							Physical struct {
								Artifact struct {
									URI string `json:"uri"`
								} `json:"artifactLocation"`
							} `json:"physicalLocation"`
						} `json:"locations"`
					} `json:"results"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(doc, &d); err != nil {
				t.Fatal(err)
			}
			for _, r := range d.Runs[0].Results {
				uri := r.Locations[0].Physical.Artifact.URI
				if strings.Trim(uri, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/%") != "" {
					t.Errorf("uri %q is not percent-encoded", uri)
				}
			}
			return decodedStrings(t, doc)
		}},
		{"mutation report", decoded, func(t *testing.T, cs []showntest.Case) []byte {
			return decodedStrings(t, render(t, func(b *bytes.Buffer, r *Report) error { return WriteMutationReport(b, r) }, cs))
		}},
		{"step summary", names, func(t *testing.T, cs []showntest.Case) []byte {
			out := render(t, func(b *bytes.Buffer, r *Report) error { return WriteGitHubSummary(b, r) }, cs)
			// A cell is a code span: Markdown shows it as written.
			out = bytes.ReplaceAll(out, []byte(`\|`), []byte("|"))
			return out
		}},
	} {
		t.Run(p.name, func(t *testing.T) {
			cs := showntest.Cases(p.opts)
			if p.name == "step summary" {
				// A backtick would close the code span: it is shown as '.
				var keep []showntest.Case
				for _, c := range cs {
					if !strings.Contains(c.Text, "`") {
						keep = append(keep, c)
					}
				}
				cs = keep
			}
			showntest.Check(t, p.opts, cs, p.out(t, cs))
		})
	}
}

// TestGitHubAnnotationsShowAttacks: every line is bcode's own command or
// note, whatever the planted names hold, with no control, no legacy
// command, and each name visible in its escaped form.
func TestGitHubAnnotationsShowAttacks(t *testing.T) {
	cs := showntest.Cases(showntest.Options{})
	var buf bytes.Buffer
	if err := WriteGitHub(&buf, hostileReport(cs)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if raw := showntest.Raw(buf.Bytes()); raw != nil {
		t.Errorf("hidden runes in annotations: %v", raw)
	}
	if strings.Contains(strings.ToLower(out), "##[") || strings.Contains(strings.ToLower(out), "##vso[") {
		t.Errorf("a legacy workflow command in the annotations")
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "::warning file=") && !strings.HasPrefix(l, "::notice file=") && !strings.HasPrefix(l, "bcode: ") {
			t.Errorf("a line bcode did not write: %q", l)
		}
	}
	if len(lines) != GitHubAnnotationLimit+1 {
		t.Errorf("%d lines, want %d annotations and the note", len(lines), GitHubAnnotationLimit)
	}
	// The mutant whose tests are every planted name is beyond the cap;
	// its message must still be one shown line.
	msg := ghData(hostileReport(cs).Mutants[len(cs)].Message())
	for _, c := range cs {
		if !strings.Contains(msg, strings.ReplaceAll(shown.Line(c.Text), "%", "%25")) {
			t.Errorf("%s: not shown in the annotation as %q", c.Name, shown.Line(c.Text))
		}
	}
	if strings.ContainsAny(msg, "\r\n") || showntest.Raw([]byte(msg)) != nil {
		t.Errorf("annotation data is not one shown line: %q", msg)
	}
}
