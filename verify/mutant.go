package verify

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox/shown"
)

// MutantVerdict is what running a mutant showed.
type MutantVerdict string

const (
	// MutantKilled: a covering test failed (or crashed) with the mutant active.
	MutantKilled MutantVerdict = "killed"
	// MutantSurvived: every covering test passed with the mutant active.
	MutantSurvived MutantVerdict = "survived"
	// MutantNotCovered: no test of the package reaches the mutant.
	MutantNotCovered MutantVerdict = "not_covered"
	// MutantTimeout: the covering tests did not finish within the run
	// budget. Never counted as killed: a hang is not evidence a test checks
	// anything.
	MutantTimeout MutantVerdict = "timeout"
	// MutantUnviable: the mutant did not build. Never counted as killed.
	MutantUnviable MutantVerdict = "unviable"
	// MutantIgnored: suppressed by a //bcode:ignore-mutant directive with a
	// reason.
	MutantIgnored MutantVerdict = "ignored"
	// MutantNoVerdict: the run stopped (cancellation, runner failure) before
	// the mutant got a verdict. Reported, never hidden.
	MutantNoVerdict MutantVerdict = "no_verdict"
	// MutantPruned marks mutants go/types (or Python's own checks) showed
	// cannot build or cannot behave differently, so they were never run.
	MutantPruned MutantVerdict = "pruned"
)

// Words is the verdict as a reader says it: "not covered", "no verdict".
func (v MutantVerdict) Words() string { return strings.ReplaceAll(string(v), "_", " ") }

// MutantAttention is what a mutant of a verdict asks of the person reading
// a report. It is the one "reported" rule of every surface (the CLI's
// annotations and SARIF, the step summary, the editor's diagnostics, the
// language server's progress): each maps the attention to its own levels
// and shows exactly the mutants this rule reports, no more and no fewer.
type MutantAttention int

const (
	// MutantQuiet: killed, unviable or pruned. Not a problem: counted in
	// the totals, never listed as a finding.
	MutantQuiet MutantAttention = iota
	// MutantWarning: survived. A wrong version of the code no test
	// noticed: the finding evidence exists to show.
	MutantWarning
	// MutantNotice: not covered, timed out, or without a verdict. Not
	// evidence either way, and a user must see it: a line no test reaches,
	// a hang that proves nothing, a run that stopped before the mutant.
	MutantNotice
	// MutantSuppressed: ignored by a //bcode:ignore-mutant directive with
	// a reason. Shown only where a format has a place for suppressed
	// results (SARIF's suppressions, the listings of the text summary and
	// the step summary), never as a finding: not as an editor diagnostic,
	// not as a CI annotation.
	MutantSuppressed
)

// Attention is the verdict's place in the reported rule. A verdict this
// version does not know is a notice: never hidden.
func (v MutantVerdict) Attention() MutantAttention {
	switch v {
	case MutantKilled, MutantUnviable, MutantPruned:
		return MutantQuiet
	case MutantSurvived:
		return MutantWarning
	case MutantIgnored:
		return MutantSuppressed
	}
	return MutantNotice
}

// Reported reports whether a mutant of this verdict is a finding every
// surface shows: a warning or a notice.
func (v MutantVerdict) Reported() bool {
	a := v.Attention()
	return a == MutantWarning || a == MutantNotice
}

// Mutant is one small wrong version of the code and what running it
// showed. It is the one mutant type: the evidence run produces it, the
// gate's MutationSummary carries it, and every surface presents it through
// its methods (Message, Rewrite, Diff).
type Mutant struct {
	// ID is stable across edits elsewhere in the file: a hash of the file,
	// the enclosing function, the operator, the original and mutated text
	// and the occurrence index of that same mutation within the function.
	// Line numbers are not part of it.
	ID   string `json:"id"`
	File string `json:"file"` // slash-separated, relative to the repository root
	Func string `json:"func"` // "Name", "Recv.Name", or "" at package level
	// Line, Col, EndLine, EndCol delimit the original text: 1-based lines,
	// 1-based columns counted in bytes (as go/token does); EndCol is the
	// column just after the last byte (exclusive), like SARIF's endColumn.
	Line    int `json:"line"`
	Col     int `json:"col"`
	EndLine int `json:"end_line"`
	EndCol  int `json:"end_col"`

	Operator string `json:"operator"`
	Original string `json:"original"`
	Mutated  string `json:"mutated"`

	Verdict  MutantVerdict `json:"verdict"`
	KilledBy string        `json:"killed_by,omitempty"`
	// Tests are the tests that ran against the mutant (its covering tests).
	Tests        []string      `json:"tests,omitempty"`
	Detail       string        `json:"detail,omitempty"`
	Duration     time.Duration `json:"duration_ns"`
	IgnoreReason string        `json:"ignore_reason,omitempty"`
	// Schema is false for mutants that ran through the per-mutant overlay
	// fallback instead of the package's schema binary.
	Schema bool `json:"schema"`
}

// Rewrite is the mutation as a reader sees it, each side one shown line in
// backticks: "`n > 10` → `n >= 10`".
func (m Mutant) Rewrite() string {
	return fmt.Sprintf("`%s` → `%s`", shown.Flat(m.Original), shown.Flat(m.Mutated))
}

// Message is the one-line description of a mutant that every surface
// shows for it (SARIF results, CI annotations, editor diagnostics): the
// verdict, the rewrite, the operator and what the verdict means, with the
// tests that ran. It is shown text: no hidden rune of a file, test name or
// detail reaches the reader through it.
func (m Mutant) Message() string {
	s := fmt.Sprintf("Mutant %s: %s (%s)", m.verdictWords(), m.Rewrite(), shown.Line(m.Operator))
	switch m.Verdict {
	case MutantSurvived:
		s += ": no test failed"
		if len(m.Tests) > 0 {
			s += "; tests run: " + shown.Line(strings.Join(m.Tests, ", "))
		}
		return s
	case MutantNotCovered:
		return s + ": no test reaches this line"
	case MutantTimeout:
		s += ": the tests did not finish, which proves nothing"
	case MutantKilled:
		if m.KilledBy != "" {
			s += " by " + shown.Line(m.KilledBy)
		}
	case MutantIgnored:
		return s + ": " + shown.Line(m.IgnoreReason)
	}
	if m.Detail != "" {
		s += ": " + shown.Line(m.Detail)
	}
	return s
}

// verdictWords is the verdict in Message's sentence.
func (m Mutant) verdictWords() string {
	switch m.Verdict {
	case MutantTimeout:
		return "timed out"
	case MutantNoVerdict, "":
		return "without a verdict"
	}
	return shown.Line(m.Verdict.Words())
}

// ErrMutantSource: the evidence report does not hold the source the mutant
// was made from; ErrStaleMutant: that source no longer holds the mutant's
// original text where the mutant says. Either way a new run answers.
var (
	ErrMutantSource = errors.New("the mutant's source is not in the evidence report: run evidence again")
	ErrStaleMutant  = errors.New("the mutant does not match its file's source any more: run evidence again")
)

// Diff is the mutant as a unified diff of its file, with three lines of
// context: src is the file's content the mutant was made from (the
// evidence report's Sources). The text is the file's own, unsanitized: a
// surface shows it through its sanitizer as it shows any file.
func (m Mutant) Diff(src string) (string, error) {
	start := lineStart(src, m.Line-1)
	end := lineStart(src, m.EndLine-1)
	if src == "" || start < 0 || end < 0 {
		return "", fmt.Errorf("%s: %w", m.File, ErrMutantSource)
	}
	from, to := start+m.Col-1, end+m.EndCol-1
	if m.Col < 1 || m.EndCol < 1 || from > len(src) || to > len(src) || from > to || src[from:to] != m.Original {
		return "", fmt.Errorf("mutant %s of %s: %w", m.ID, m.File, ErrStaleMutant)
	}
	mutated := src[:from] + m.Mutated + src[to:]
	oldLines, newLines := diffLines(src), diffLines(mutated)
	first := m.Line - 1
	lastOld := m.EndLine - 1
	lastNew := lastOld + strings.Count(m.Mutated, "\n") - strings.Count(m.Original, "\n")
	ctxFrom := max(first-3, 0)
	ctxToOld := min(lastOld+3, len(oldLines)-1)
	ctxToNew := min(lastNew+3, len(newLines)-1)
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s (mutant %s: %s, %s)\n", m.File, m.File, m.ID, m.Operator, m.Verdict)
	fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", ctxFrom+1, ctxToOld-ctxFrom+1, ctxFrom+1, ctxToNew-ctxFrom+1)
	line := func(prefix, l string) {
		b.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
	}
	for i := ctxFrom; i < first; i++ {
		line(" ", oldLines[i])
	}
	for i := first; i <= lastOld; i++ {
		line("-", oldLines[i])
	}
	for i := first; i <= lastNew; i++ {
		line("+", newLines[i])
	}
	for i := lastOld + 1; i <= ctxToOld; i++ {
		line(" ", oldLines[i])
	}
	return b.String(), nil
}

// diffLines splits text into lines that keep their newlines; a text that
// ends with a newline has no empty last line.
func diffLines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if len(l) > 0 && l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// lineStart is the byte offset where 0-based line n of s starts, or -1.
func lineStart(s string, n int) int {
	if n < 0 {
		return -1
	}
	off := 0
	for i := 0; i < n; i++ {
		j := strings.IndexByte(s[off:], '\n')
		if j < 0 {
			return -1
		}
		off += j + 1
	}
	return off
}
