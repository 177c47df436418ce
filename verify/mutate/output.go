package mutate

import (
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/verify"
)

// verdictOrder is the order the human summary lists verdicts in: what
// needs attention first.
var verdictOrder = []Verdict{Survived, NotCovered, Timeout, NoVerdict, Unviable, Ignored, Killed}

var verdictTitle = map[Verdict]string{
	Survived:   "Surviving mutants: no test noticed these changes",
	NotCovered: "Not covered: no test reaches these lines",
	Timeout:    "Timed out (not counted as killed)",
	NoVerdict:  "No verdict",
	Unviable:   "Unviable: the mutant does not build (not counted as killed)",
	Ignored:    "Ignored by //bcode:ignore-mutant",
	Killed:     "Killed",
}

// WriteText writes the human summary: survivors first, each with
// file:line, original and mutated text and the tests that ran; killed
// mutants only as a count; then counts and timings.
func WriteText(w io.Writer, rep *Report) error {
	ew := &errWriter{w: w}
	by := map[Verdict][]Mutant{}
	for _, m := range rep.Mutants {
		by[m.Verdict] = append(by[m.Verdict], m)
	}
	if len(rep.Mutants) == 0 {
		ew.printf("No mutable code on the changed lines.\n")
	}
	for _, v := range verdictOrder {
		ms := by[v]
		if len(ms) == 0 || v == Killed {
			continue
		}
		ew.printf("%s (%d)\n", verdictTitle[v], len(ms))
		for _, m := range ms {
			ew.printf("  %s:%d:%d  %s  %s  →  %s\n", shown.Line(m.File), m.Line, m.Col, shown.Line(m.Operator), oneLine(m.Original), oneLine(m.Mutated))
			switch {
			case v == Ignored:
				ew.printf("      reason: %s\n", shown.Line(m.IgnoreReason))
			case len(m.Tests) > 0:
				ew.printf("      tests run: %s\n", shown.Line(strings.Join(m.Tests, ", ")))
			}
			if m.Detail != "" && v != Survived {
				ew.printf("      %s\n", shown.Line(m.Detail))
			}
		}
		ew.printf("\n")
	}
	if len(rep.Quarantined) > 0 {
		ew.printf("Quarantined flaky baseline tests (their runs disagreed; not used against mutants): %s\n\n", shown.Line(strings.Join(rep.Quarantined, ", ")))
	}
	for _, n := range rep.Notes {
		ew.printf("note: %s\n", shown.Line(n))
	}
	for _, e := range rep.Errors {
		ew.printf("error: %s\n", shown.Line(e))
	}
	if len(rep.Errors)+len(rep.Notes) > 0 {
		ew.printf("\n")
	}
	st := rep.Stats
	var parts []string
	for _, v := range []Verdict{Killed, Survived, NotCovered, Timeout, Unviable, Ignored, NoVerdict} {
		if n := st.Verdicts[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v.Words()))
		}
	}
	summary := strings.Join(parts, ", ")
	if summary == "" {
		summary = "none run"
	}
	ew.printf("%d mutants: %s; %d pruned: cannot build or cannot differ (of %d generated)\n", len(rep.Mutants), summary, st.Pruned, st.Generated)
	ew.printf("baseline %s (%d of %d baselines cached), compile %s, run %s, wall %s; %.0f mutants/min; %d from schemata, %d from per-mutant builds or processes\n",
		round(st.Baseline), st.BaselineCached, st.Packages, round(st.Compile), round(st.Run), round(st.Wall), st.MutantsPerMinute, st.SchemaMutants, st.OverlayMutants)
	return ew.err
}

func round(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// oneLine is code (an original or mutated expression) on one line, shown.
func oneLine(s string) string { return shown.Flat(s) }

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, rep *Report) error { return writeShownJSON(w, rep) }

// writeShownJSON writes v as indented JSON whose every string is shown
// (shown.JSON): what a viewer renders from it holds no hidden rune.
func writeShownJSON(w io.Writer, v any) error {
	b, err := shown.JSONIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

var operatorHelp = map[string]string{
	OpConditionalBoundary: "A comparison's boundary was moved (< and <=, > and >=) and no test noticed: no test pins the boundary value.",
	OpRelationalNegation:  "A comparison was negated and no test noticed.",
	OpConditionNegation:   "A condition was negated and no test noticed.",
	OpConstantBound:       "An integer constant bounding a comparison, index or slice was moved by one and no test noticed.",
	OpArithIndex:          "+ and - were swapped in index or length arithmetic and no test noticed.",
	OpBoolLiteral:         "A returned boolean literal was flipped and no test noticed.",
}

func operators() []string {
	ops := make([]string, 0, len(operatorHelp))
	for op := range operatorHelp {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// charCol converts a 1-based byte column on line of src to a 1-based
// column in Unicode code points. Without the source it returns col.
func charCol(src string, line, col int) int {
	if src == "" {
		return col
	}
	for i := 1; i < line; i++ {
		j := strings.IndexByte(src, '\n')
		if j < 0 {
			return col
		}
		src = src[j+1:]
	}
	if col-1 > len(src) {
		return col
	}
	return utf8.RuneCountInString(src[:col-1]) + 1
}

// sarifLevel is SARIF's level for a mutant by the one reported rule
// (verify.MutantAttention): survivors warn, notices are notes, suppressed
// mutants are notes with a suppression; quiet ones are not results.
func sarifLevel(v Verdict) (string, bool) {
	switch v.Attention() {
	case verify.MutantWarning:
		return "warning", true
	case verify.MutantNotice, verify.MutantSuppressed:
		return "note", true
	}
	return "", false
}

// WriteSARIF writes SARIF 2.1.0 for code-scanning UIs: survivors as
// warnings, uncovered, timed-out and unjudged mutants as notes, ignored
// mutants as suppressed results (SARIF's place for them). Columns are
// Unicode code points.
func WriteSARIF(w io.Writer, rep *Report) error {
	type msg struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID               string         `json:"id"`
		Name             string         `json:"name"`
		ShortDescription msg            `json:"shortDescription"`
		FullDescription  msg            `json:"fullDescription"`
		DefaultConfig    map[string]any `json:"defaultConfiguration"`
	}
	ops := operators()
	ruleIndex := map[string]int{}
	var rules []rule
	for i, op := range ops {
		ruleIndex[op] = i
		rules = append(rules, rule{
			ID: op, Name: camel(op),
			ShortDescription: msg{"Surviving mutant: " + strings.ReplaceAll(op, "_", " ")},
			FullDescription:  msg{operatorHelp[op]},
			DefaultConfig:    map[string]any{"level": "warning"},
		})
	}
	results := []map[string]any{}
	for _, m := range rep.Mutants {
		level, ok := sarifLevel(m.Verdict)
		if !ok {
			continue
		}
		src := rep.Sources[m.File]
		r := map[string]any{
			"ruleId":    m.Operator,
			"ruleIndex": ruleIndex[m.Operator],
			"level":     level,
			"message":   msg{m.Message()},
			"locations": []any{map[string]any{
				"physicalLocation": map[string]any{
					"artifactLocation": map[string]any{"uri": uriPath(m.File), "uriBaseId": "%SRCROOT%"},
					"region": map[string]any{
						"startLine": m.Line, "startColumn": charCol(src, m.Line, m.Col),
						"endLine": m.EndLine, "endColumn": charCol(src, m.EndLine, m.EndCol),
					},
				},
			}},
			"partialFingerprints": map[string]string{"bcodeMutantId/v1": m.ID},
			"properties":          map[string]any{"verdict": m.Verdict, "mutated": m.Mutated, "tests": m.Tests},
		}
		if m.Verdict.Attention() == verify.MutantSuppressed {
			r["suppressions"] = []any{map[string]any{"kind": "inSource", "justification": m.IgnoreReason}}
		}
		results = append(results, r)
	}
	doc := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name":           "bcode-evidence",
				"informationUri": "https://github.com/bcode-dev/bcode",
				"rules":          rules,
			}},
			"columnKind": "unicodeCodePoints",
			"results":    results,
		}},
	}
	return writeShownJSON(w, doc)
}

// uriPath is a slash path as a relative URI reference: every byte but
// unreserved characters and slashes percent-encoded (RFC 3986), so a
// name's controls, spaces, '%', '#', '?' and ':' cannot change what it
// refers to or how it is shown.
func uriPath(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~', c == '/':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
	}
	return b.String()
}

func camel(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "_") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

// GitHubAnnotationLimit is how many annotations of one kind (warning,
// notice) GitHub shows for a step; the rest are dropped without a word, so
// WriteGitHub stops there and says so, and WriteGitHubSummary lists them all.
const GitHubAnnotationLimit = 10

// WriteGitHub writes GitHub Actions workflow commands: a warning per
// surviving mutant and a notice per uncovered, timed-out or unjudged one
// (the reported rule: annotations have no place for suppressed results),
// at most GitHubAnnotationLimit of each (in file and line order), then a
// plain log line counting what was left out.
func WriteGitHub(w io.Writer, rep *Report) error {
	ew := &errWriter{w: w}
	shown := map[string]int{}
	left := map[string]int{}
	for _, m := range listedInOrder(rep, false) {
		kind := "notice"
		if m.Verdict.Attention() == verify.MutantWarning {
			kind = "warning"
		}
		if shown[kind] == GitHubAnnotationLimit {
			left[kind]++
			continue
		}
		shown[kind]++
		src := rep.Sources[m.File]
		ew.printf("::%s file=%s,line=%d,col=%d,endLine=%d,endColumn=%d,title=%s::%s\n", kind,
			ghProp(m.File), m.Line, charCol(src, m.Line, m.Col), m.EndLine, charCol(src, m.EndLine, m.EndCol),
			ghProp(fmt.Sprintf("bcode: %s mutant %s", m.Verdict.Words(), m.Operator)),
			ghData(m.Message()))
	}
	for _, kind := range []string{"warning", "notice"} {
		if n := left[kind]; n > 0 {
			ew.printf("bcode: %d more %ss not annotated (GitHub shows %d of a kind per step); the step summary lists every mutant\n", n, kind, GitHubAnnotationLimit)
		}
	}
	return ew.err
}

// listedInOrder returns the mutants the reported rule shows, and the
// suppressed ones too when the format has a place for them, by file, line,
// column.
func listedInOrder(rep *Report, suppressed bool) []Mutant {
	var out []Mutant
	for _, m := range rep.Mutants {
		if m.Verdict.Reported() || (suppressed && m.Verdict.Attention() == verify.MutantSuppressed) {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return out
}

// WriteGitHubSummary writes the Markdown for $GITHUB_STEP_SUMMARY: the
// counts, then every reported mutant (survivors first), which annotations
// cannot hold past GitHubAnnotationLimit, and the ignored ones: the table
// has a verdict column, a place to show them as suppressed.
func WriteGitHubSummary(w io.Writer, rep *Report) error {
	ew := &errWriter{w: w}
	ew.printf("## bcode evidence\n\n")
	var counts []string
	for _, v := range verdictOrder {
		if n := rep.Stats.Verdicts[v]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, v.Words()))
		}
	}
	if len(counts) == 0 {
		ew.printf("No mutants: the changed lines have no mutable code.\n")
		return ew.err
	}
	ew.printf("%d mutants: %s.\n\n", len(rep.Mutants), strings.Join(counts, ", "))
	ms := listedInOrder(rep, true)
	sort.SliceStable(ms, func(i, j int) bool {
		return (ms[i].Verdict == Survived) && (ms[j].Verdict != Survived)
	})
	if len(ms) == 0 {
		return ew.err
	}
	ew.printf("| verdict | where | mutant | tests run | id |\n|---|---|---|---|---|\n")
	// Every agent-controlled cell is a code span: Markdown shows it
	// literally (no link, image, HTML or emphasis), and neither a pipe nor a
	// backtick can close it.
	md := func(s string) string { return strings.NewReplacer("|", "\\|", "`", "'").Replace(shown.Line(s)) }
	for _, m := range ms {
		tests := "none"
		if len(m.Tests) > 0 {
			tests = "`" + md(strings.Join(m.Tests, ", ")) + "`"
		}
		ew.printf("| %s | `%s:%d` | `%s` → `%s` (%s) | %s | `%s` |\n", m.Verdict.Words(),
			md(m.File), m.Line, md(m.Original), md(m.Mutated), md(m.Operator), tests, md(m.ID))
	}
	return ew.err
}

// ghData and ghProp escape workflow-command text as the runner expects,
// after shown.Line has made its controls visible (the log viewer renders
// escape sequences) and broken any "##[" the runner would act on.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(shown.Line(s))
}

func ghProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(shown.Line(s))
}

// mutationStatus maps verdicts to the mutation-testing-report-schema.
var mutationStatus = map[Verdict]string{
	Killed: "Killed", Survived: "Survived", NotCovered: "NoCoverage", Timeout: "Timeout",
	Unviable: "CompileError", Ignored: "Ignored", NoVerdict: "Pending",
}

// languageOf is the language of the engine that mutated file; a report
// built without a run (a test's, an old one) gets the file's extension.
func languageOf(rep *Report, file string) string {
	if l := rep.Languages[file]; l != "" {
		return l
	}
	return strings.TrimPrefix(path.Ext(file), ".")
}

// The mutation-testing-report-schema's documents (schema version 1).
type (
	mrPos struct {
		Line   int `json:"line"`
		Column int `json:"column"`
	}
	mrLoc struct {
		Start mrPos `json:"start"`
		End   mrPos `json:"end"`
	}
	mrMutant struct {
		ID             string   `json:"id"`
		MutatorName    string   `json:"mutatorName"`
		Replacement    string   `json:"replacement"`
		Location       mrLoc    `json:"location"`
		Status         string   `json:"status"`
		StatusReason   string   `json:"statusReason,omitempty"`
		Description    string   `json:"description,omitempty"`
		KilledBy       []string `json:"killedBy,omitempty"`
		CoveredBy      []string `json:"coveredBy,omitempty"`
		TestsCompleted *int     `json:"testsCompleted,omitempty"`
		Duration       *int64   `json:"duration,omitempty"`
	}
	mrFile struct {
		Language string     `json:"language"`
		Source   string     `json:"source"`
		Mutants  []mrMutant `json:"mutants"`
	}
	mrTest struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	mrTestFile struct {
		Source string   `json:"source,omitempty"`
		Tests  []mrTest `json:"tests"`
	}
)

// mrTests collects the test files of a mutation-testing report and gives
// each test its ID.
type mrTests struct {
	rep   *Report
	files map[string]*mrTestFile
	seen  map[string]bool
}

// id is the ID of the test name that covers or killed m, recorded under
// its test file the first time.
func (ts *mrTests) id(m Mutant, name string) string {
	dir := path.Dir(m.File)
	id := dir + ":" + name
	if ts.seen[id] {
		return id
	}
	ts.seen[id] = true
	top := name // a pytest node ID names its file itself
	if !strings.Contains(name, "::") {
		top, _, _ = strings.Cut(name, "/")
	}
	file := ts.rep.TestFiles[dir+":"+top]
	if file == "" {
		// Not found (a test binary built elsewhere): name the
		// package, never the bare "." the viewer shows as a file.
		file = path.Join(dir, "(tests of this package)")
	}
	tf := ts.files[file]
	if tf == nil {
		tf = &mrTestFile{Source: ts.rep.Sources[file]}
		ts.files[file] = tf
	}
	tf.Tests = append(tf.Tests, mrTest{ID: id, Name: name})
	return id
}

// mrMutantOf is m as the report's schema has it; src is its file's source.
func mrMutantOf(m Mutant, src string, ts *mrTests) mrMutant {
	r := mrMutant{
		ID: m.ID, MutatorName: m.Operator, Replacement: m.Mutated,
		Location: mrLoc{
			Start: mrPos{m.Line, charCol(src, m.Line, m.Col)},
			End:   mrPos{m.EndLine, charCol(src, m.EndLine, m.EndCol)},
		},
		Status:      mutationStatus[m.Verdict],
		Description: fmt.Sprintf("%s → %s", oneLine(m.Original), oneLine(m.Mutated)),
	}
	if r.Status == "" {
		r.Status = "Pending"
	}
	switch {
	case m.Verdict == Ignored:
		r.StatusReason = m.IgnoreReason
	case m.Detail != "":
		r.StatusReason = m.Detail
	}
	for _, t := range m.Tests {
		r.CoveredBy = append(r.CoveredBy, ts.id(m, t))
	}
	if m.KilledBy != "" {
		for _, t := range strings.Split(m.KilledBy, ",") {
			r.KilledBy = append(r.KilledBy, ts.id(m, t))
		}
	}
	if m.Verdict == Killed || m.Verdict == Survived {
		n := len(m.Tests)
		d := m.Duration.Milliseconds()
		r.TestsCompleted, r.Duration = &n, &d
	}
	return r
}

// WriteMutationReport writes the open mutation-testing-report-schema JSON
// (schema version 1) that Stryker's mutation-testing-elements viewer reads.
// Locations are 1-based, end exclusive, columns in code points.
func WriteMutationReport(w io.Writer, rep *Report) error {
	files := map[string]*mrFile{}
	ts := &mrTests{rep: rep, files: map[string]*mrTestFile{}, seen: map[string]bool{}}
	for _, m := range rep.Mutants {
		f := files[m.File]
		if f == nil {
			f = &mrFile{Language: languageOf(rep, m.File), Source: rep.Sources[m.File]}
			files[m.File] = f
		}
		f.Mutants = append(f.Mutants, mrMutantOf(m, f.Source, ts))
	}
	doc := map[string]any{
		"$schema":       "https://git.io/mutation-testing-schema",
		"schemaVersion": "1",
		"thresholds":    map[string]int{"high": 80, "low": 60},
		"files":         files,
		"testFiles":     ts.files,
		"framework":     map[string]any{"name": "bcode"},
	}
	return writeShownJSON(w, doc)
}
