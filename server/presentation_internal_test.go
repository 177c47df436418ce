package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/sandbox/shown/showntest"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// presentationTable is one mutant of every verdict a run reports, each on
// a line of its own, with a test name and a detail that carry an escape
// sequence and a bidi control.
func presentationTable(t *testing.T) (root, src string, ms []verify.Mutant) {
	t.Helper()
	verdicts := []verify.MutantVerdict{verify.MutantSurvived, verify.MutantNotCovered, verify.MutantTimeout, verify.MutantNoVerdict,
		verify.MutantIgnored, verify.MutantKilled, verify.MutantUnviable, verify.MutantSurvived}
	var b strings.Builder
	b.WriteString("package p\n\nfunc F(n int) bool {\n")
	for i, v := range verdicts {
		line := 4 + i
		fmt.Fprintf(&b, "\tif n > %d {\n", 10+i)
		orig := fmt.Sprintf("n > %d", 10+i)
		m := verify.Mutant{ID: fmt.Sprintf("%016x", i), File: "p/p.go", Line: line, Col: 5, EndLine: line, EndCol: 5 + len(orig),
			Operator: mutate.OpConditionalBoundary, Original: orig, Mutated: fmt.Sprintf("n >= %d", 10+i), Verdict: v}
		switch v {
		case verify.MutantSurvived:
			m.Tests = []string{"TestF", "TestG/evil\x1b]0;pwned\x07\u202ecase"}
		case verify.MutantKilled:
			m.Tests, m.KilledBy = []string{"TestF"}, "TestF"
		case verify.MutantTimeout, verify.MutantNoVerdict, verify.MutantUnviable:
			m.Detail = "the worker stopped\r\x1b[2K before it"
		case verify.MutantIgnored:
			m.IgnoreReason = "checked upstream"
		}
		ms = append(ms, m)
	}
	b.WriteString("\treturn false\n}\n")
	src = b.String()
	root = t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "p", "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, src, ms
}

// TestOnePresentation renders one table of mutants of every verdict through
// the editor's diagnostics and through the CLI's SARIF and GitHub
// annotations: each path shows the same mutants (the one reported rule,
// suppressed ones only in SARIF's suppressions) with the same message, at
// the same level, and the message is shown text.
func TestOnePresentation(t *testing.T) {
	root, src, ms := presentationTable(t)
	byID := map[string]verify.Mutant{}
	var wantReported, wantSuppressed []string
	for _, m := range ms {
		byID[m.ID] = m
		switch {
		case m.Verdict.Reported():
			wantReported = append(wantReported, m.ID)
		case m.Verdict.Attention() == verify.MutantSuppressed:
			wantSuppressed = append(wantSuppressed, m.ID)
		}
	}
	if len(wantReported) != 5 || len(wantSuppressed) != 1 {
		t.Fatalf("the table reports %d and suppresses %d; want 5 and 1", len(wantReported), len(wantSuppressed))
	}
	level := func(m verify.Mutant) string { // one word per attention, to compare paths
		if m.Verdict.Attention() == verify.MutantWarning {
			return "warning"
		}
		return "note"
	}

	// The editor.
	s := &Server{root: root, set: DefaultSettings, docs: map[string]*document{}}
	rep := EvidenceReport{Mutants: ms, sources: map[string]string{"p/p.go": src}}
	editor := map[string]string{}
	for _, d := range s.diagnosticsOf(root, &rep)[lsp.FileURI(filepath.Join(root, "p", "p.go"))] {
		md, ok := mutantData(d)
		if !ok {
			t.Fatalf("diagnostic without bcode's data: %+v", d)
		}
		m := byID[md.ID]
		lv := map[lsp.Severity]string{lsp.SeverityWarning: "warning", lsp.SeverityInformation: "note"}[d.Severity]
		if lv != level(m) || md.Verdict != m.Verdict || len(md.Tests) != len(m.Tests) {
			t.Errorf("%s: severity %d, data %+v", m.Verdict, d.Severity, md)
		}
		editor[md.ID] = d.Message
	}

	// The CLI's SARIF.
	mrep := &mutate.Report{Mutants: ms, Sources: map[string]string{"p/p.go": src}, Stats: mutate.Stats{Verdicts: map[mutate.Verdict]int{}}}
	var sarifBuf bytes.Buffer
	if err := mutate.WriteSARIF(&sarifBuf, mrep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Results []struct {
				Level   string `json:"level"`
				Message struct {
					Text string `json:"text"`
				} `json:"message"`
				Fingerprints map[string]string `json:"partialFingerprints"`
				Suppressions []json.RawMessage `json:"suppressions"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(sarifBuf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	sarif := map[string]string{}
	var suppressed []string
	for _, r := range doc.Runs[0].Results {
		id := r.Fingerprints["bcodeMutantId/v1"]
		m := byID[id]
		if len(r.Suppressions) > 0 {
			suppressed = append(suppressed, id)
			continue
		}
		if r.Level != level(m) {
			t.Errorf("%s: SARIF level %s, want %s", m.Verdict, r.Level, level(m))
		}
		sarif[id] = r.Message.Text
	}

	// The CLI's GitHub annotations: "::kind props::data", data escaped.
	var ghBuf bytes.Buffer
	if err := mutate.WriteGitHub(&ghBuf, mrep); err != nil {
		t.Fatal(err)
	}
	byMessage := map[string]string{}
	for _, m := range ms {
		byMessage[m.Message()] = m.ID
	}
	github := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(ghBuf.String(), "\n"), "\n") {
		kind, rest, _ := strings.Cut(strings.TrimPrefix(l, "::"), " ")
		_, data, ok := strings.Cut(rest, "::")
		if !ok {
			t.Fatalf("not an annotation: %q", l)
		}
		msg := strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(data)
		id, ok := byMessage[msg]
		if !ok {
			t.Errorf("annotation %q is no mutant's message", msg)
			continue
		}
		if want := map[string]string{"warning": "warning", "note": "notice"}[level(byID[id])]; kind != want {
			t.Errorf("%s: annotation kind %s, want %s", byID[id].Verdict, kind, want)
		}
		github[id] = msg
	}

	for name, got := range map[string]map[string]string{"editor": editor, "SARIF": sarif, "GitHub": github} {
		if ids := sortedKeys(got); !equal(ids, wantReported) {
			t.Errorf("%s reports %v, want %v (the reported rule)", name, ids, wantReported)
		}
		for id, msg := range got {
			if want := byID[id].Message(); msg != want {
				t.Errorf("%s: %s message\n got %q\nwant %q", name, byID[id].Verdict, msg, want)
			}
		}
	}
	if !equal(suppressed, wantSuppressed) {
		t.Errorf("SARIF suppresses %v, want %v", suppressed, wantSuppressed)
	}
	for _, m := range ms {
		msg := m.Message()
		if showntest.Raw([]byte(msg)) != nil || shown.Line(msg) != msg || strings.ContainsAny(msg, "\r\n") {
			t.Errorf("%s: message %q is not one shown line (the LSP layer would change it)", m.Verdict, msg)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}
