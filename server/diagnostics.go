package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify"
)

// Source is the diagnostics' source field.
const Source = "bcode"

// publishedSet remembers the hash of what each document last received, so a
// document is republished only when its diagnostics really change.
type publishedSet struct {
	mu   sync.Mutex
	hash map[string]string // URI -> hash of its diagnostics
}

// severity is the editor's level for a mutant by the one reported rule
// (verify.MutantAttention): survivors warn, notices inform; an editor has
// no place for suppressed results, so ignored mutants, like quiet ones,
// get no diagnostic.
func severity(v verify.MutantVerdict) (lsp.Severity, bool) {
	switch v.Attention() {
	case verify.MutantWarning:
		return lsp.SeverityWarning, true
	case verify.MutantNotice:
		return lsp.SeverityInformation, true
	}
	return 0, false
}

// MutantData is a mutant diagnostic's data: what its code actions need,
// as data, so nothing is parsed back out of the message. An editor sends
// it back with a code action request as it received it.
type MutantData struct {
	// ID is the mutant's ID in the last evidence report. A diagnostic that
	// folds the not-covered mutants of one line carries the first one's.
	ID      string               `json:"id"`
	Verdict verify.MutantVerdict `json:"verdict"`
	// Tests are the tests that ran against the mutant, in the report's
	// order.
	Tests []CoveringTest `json:"tests,omitempty"`
}

// CoveringTest is a test that ran against a mutant, with where it is
// declared when bcode-ls found it.
type CoveringTest struct {
	Name     string        `json:"name"`
	Location *lsp.Location `json:"location,omitempty"`
}

// mutantData decodes a diagnostic's data; false when it is not bcode's.
func mutantData(d lsp.Diagnostic) (MutantData, bool) {
	var md MutantData
	if d.Source != Source || json.Unmarshal(d.Data, &md) != nil || md.ID == "" {
		return MutantData{}, false
	}
	return md, true
}

// republish recomputes every document's diagnostics from the last report
// and the current texts, and publishes those whose hash changed.
func (s *Server) republish(ctx context.Context) {
	root, err := s.workspace()
	if err != nil {
		return
	}
	s.ev.mu.Lock()
	rep := s.ev.last
	s.ev.mu.Unlock()
	diags := s.diagnosticsOf(root, &rep)

	s.ev.pub.mu.Lock()
	defer s.ev.pub.mu.Unlock()
	uris := map[string]bool{}
	for u := range diags {
		uris[u] = true
	}
	for u := range s.ev.pub.hash {
		uris[u] = true
	}
	sorted := make([]string, 0, len(uris))
	for u := range uris {
		sorted = append(sorted, u)
	}
	sort.Strings(sorted)
	for _, u := range sorted {
		ds := diags[u]
		h := hashOf(ds)
		if s.ev.pub.hash[u] == h {
			continue
		}
		if ds == nil {
			ds = []lsp.Diagnostic{}
		}
		if err := s.client.PublishDiagnostics(ctx, u, ds); err != nil {
			s.log.Warn("publishing diagnostics", "uri", u, "err", err)
			continue
		}
		if len(ds) == 0 {
			delete(s.ev.pub.hash, u)
		} else {
			s.ev.pub.hash[u] = h
		}
	}
}

func hashOf(ds []lsp.Diagnostic) string {
	if len(ds) == 0 {
		return ""
	}
	b, _ := json.Marshal(ds)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// diagnosticsOf turns a report into diagnostics by document URI, placed on
// the current text of each file: a mutant whose line was edited away is
// dropped, one whose line only moved follows it.
func (s *Server) diagnosticsOf(root string, rep *EvidenceReport) map[string][]lsp.Diagnostic {
	out := map[string][]lsp.Diagnostic{}
	tests := testLocator{root: root, found: map[string]lsp.Location{}}
	notCovered := s.settings().NotCovered
	// uncovered gathers the not-covered mutants of each line when they are
	// shown one diagnostic per line.
	type lineKey struct {
		uri  string
		line uint32
	}
	uncovered := map[lineKey][]uncoveredAt{}
	for _, m := range rep.Mutants {
		sev, ok := severity(m.Verdict)
		if !ok || (m.Verdict == verify.MutantNotCovered && notCovered == NotCoveredOff) {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(m.File))
		src := rep.sources[m.File]
		cur, err := s.text(abs)
		if err != nil {
			continue // the file is gone: so is its mutant
		}
		if src == "" {
			src = cur
		}
		shift, ok := follow(src, cur, m.Line, m.EndLine)
		if !ok {
			continue
		}
		start, ok1 := bytePos(cur, m.Line+shift, m.Col)
		end, ok2 := bytePos(cur, m.EndLine+shift, m.EndCol)
		if !ok1 || !ok2 {
			continue
		}
		uri := lsp.FileURI(abs)
		d := mutantDiagnostic(m, uri, lsp.Range{Start: start, End: end}, sev, func(t string) lsp.Location { return tests.locate(filepath.Dir(abs), t) })
		if m.Verdict == verify.MutantNotCovered && notCovered == NotCoveredLine {
			k := lineKey{uri, d.Range.Start.Line}
			uncovered[k] = append(uncovered[k], uncoveredAt{d, m})
			continue
		}
		out[uri] = append(out[uri], d)
	}
	for k, ds := range uncovered {
		out[k.uri] = append(out[k.uri], lineOfUncovered(ds))
	}
	for _, ds := range out {
		sort.Slice(ds, func(i, j int) bool {
			a, b := ds[i].Range.Start, ds[j].Range.Start
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			if a.Character != b.Character {
				return a.Character < b.Character
			}
			return ds[i].Message < ds[j].Message
		})
	}
	return out
}

// mutantDiagnostic is m's diagnostic on rng of uri: its message, and its
// covering tests twice, as related information for the reader and in the
// data (MutantData) for the code actions. locate finds a test's
// declaration (a zero Location when it cannot).
func mutantDiagnostic(m verify.Mutant, uri string, rng lsp.Range, sev lsp.Severity, locate func(test string) lsp.Location) lsp.Diagnostic {
	d := lsp.Diagnostic{Range: rng, Severity: sev, Code: m.Operator, Source: Source, Message: m.Message()}
	data := MutantData{ID: m.ID, Verdict: m.Verdict}
	for _, t := range m.Tests {
		ct := CoveringTest{Name: t}
		loc := locate(t)
		if loc.URI != "" {
			ct.Location = &loc
		} else {
			loc = lsp.Location{URI: uri, Range: rng} // not found: the related entry points at the mutant
		}
		data.Tests = append(data.Tests, ct)
		d.RelatedInformation = append(d.RelatedInformation, lsp.RelatedInformation{Location: loc, Message: "ran " + t})
	}
	d.Data, _ = json.Marshal(data)
	return d
}

type uncoveredAt struct {
	diag   lsp.Diagnostic
	mutant verify.Mutant
}

// lineOfUncovered folds the not-covered mutants of one line into one
// Information diagnostic: one marker says "no test reaches this line"
// however many mutants the line has. Its range spans them all; its data is
// the first mutant's (MutantData).
func lineOfUncovered(us []uncoveredAt) lsp.Diagnostic {
	if len(us) == 1 {
		return us[0].diag
	}
	sort.Slice(us, func(i, j int) bool { return before(us[i].diag.Range.Start, us[j].diag.Range.Start) })
	d := us[0].diag
	parts := make([]string, len(us))
	for i, u := range us {
		if before(d.Range.End, u.diag.Range.End) {
			d.Range.End = u.diag.Range.End
		}
		parts[i] = u.mutant.Rewrite()
	}
	d.Code = string(verify.MutantNotCovered)
	d.Message = fmt.Sprintf("%d mutants not covered: no test reaches this line (%s)", len(us), strings.Join(parts, ", "))
	return d
}

// follow finds where lines [line, endLine] (1-based) of src are in cur: the
// shift to add, or false when they are no longer there.
func follow(src, cur string, line, endLine int) (int, bool) {
	same := func(shift int) bool {
		for l := line; l <= endLine; l++ {
			a, ok1 := lineAt(src, l-1)
			b, ok2 := lineAt(cur, l-1+shift)
			if !ok1 || !ok2 || a != b {
				return false
			}
		}
		return true
	}
	if same(0) {
		return 0, true
	}
	// The lines moved (an edit above them): take the nearest exact match.
	for d := 1; d <= 200; d++ {
		if same(d) {
			return d, true
		}
		if line-d >= 1 && same(-d) {
			return -d, true
		}
	}
	return 0, false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// testLocator finds where a test function is declared, for a diagnostic's
// related information.
type testLocator struct {
	root  string
	found map[string]lsp.Location
}

// read reads one of the workspace's test files, confined to the workspace
// and refused over maxReadBytes (the workspace may be an agent's).
func (t *testLocator) read(abs string) ([]byte, error) {
	rel, err := filepath.Rel(t.root, abs)
	if err != nil {
		return nil, err
	}
	b, err := app.ReadConfined(t.root, filepath.ToSlash(rel), maxReadBytes)
	var big *app.TooLargeError
	if errors.As(err, &big) {
		return nil, errTooBig
	}
	return b, err
}

var testFuncRE = regexp.MustCompile(`(?m)^func (Test|Example|Fuzz|Benchmark)\w*\(`)

// locate looks for func Name( in the _test.go files of dir. name may carry
// a package prefix or a subtest ("pkg.TestX/case"). A name "file::test"
// (Python, JavaScript, Rust) is looked for in that file (locateInFile).
func (t *testLocator) locate(dir, name string) lsp.Location {
	if file, rest, ok := strings.Cut(name, "::"); ok && path.Ext(file) != "" {
		return t.locateInFile(file, rest)
	}
	if i := strings.LastIndexAny(name, ".:"); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[:i]
	}
	key := dir + "\x00" + name
	if loc, ok := t.found[key]; ok {
		return loc
	}
	var loc lsp.Location
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, f := range files {
		b, err := t.read(f)
		if err != nil {
			continue
		}
		text := string(b)
		for _, ix := range testFuncRE.FindAllStringIndex(text, -1) {
			decl := text[ix[0]+len("func ") : ix[1]-1]
			if decl != name {
				continue
			}
			line := strings.Count(text[:ix[0]], "\n")
			l, _ := lineAt(text, line)
			loc = lsp.Location{URI: lsp.FileURI(f), Range: lsp.Range{
				Start: lsp.Position{Line: uint32(line), Character: uint32(len("func "))},
				End:   lsp.Position{Line: uint32(line), Character: uint32(utf16Len(l[:len("func ")+len(name)]))},
			}}
			break
		}
		if loc.URI != "" {
			break
		}
	}
	t.found[key] = loc
	return loc
}
