package rust

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// detailLines caps the excerpt kept of a failure's output.
const detailLines = 20

// caseResult is one test's line in libtest's plain output.
type caseResult struct {
	name    string
	outcome verify.Outcome
	detail  string
}

// binaryRun is what one test binary (or the doc tests of a crate) reported,
// as `cargo test` prints it: a "Running …" or "Doc-tests …" header, a line
// per test, then the captured output of the failed ones.
type binaryRun struct {
	// source is the target's root file relative to its crate
	// ("src/lib.rs", "tests/api.rs"); doc tests are the library's.
	source   string
	doc      bool
	cases    []caseResult
	started  []string // tests whose line began but never got a result
	finished bool     // the "test result:" summary line was seen
}

// parseLibtest reads the output of `cargo test` (stdout and stderr in one
// stream, as written) into the runs of its test binaries. Output before
// any header (a single binary run without cargo's header, as in tests)
// belongs to a run with no source.
func parseLibtest(out string) []*binaryRun {
	var runs []*binaryRun
	cur := func() *binaryRun {
		if len(runs) == 0 {
			runs = append(runs, &binaryRun{})
		}
		return runs[len(runs)-1]
	}
	var section *caseResult // the failure whose captured output is being read
	var sectionRun *binaryRun
	var sectionLines []string
	flush := func() {
		if section != nil {
			section.detail = excerpt(strings.Join(sectionLines, "\n"))
			attachDetail(sectionRun, *section)
		}
		section, sectionRun, sectionLines = nil, nil, nil
	}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		if src, doc, ok := header(trimmed); ok {
			flush()
			runs = append(runs, &binaryRun{source: src, doc: doc})
			continue
		}
		if name, ok := sectionHeader(line); ok {
			flush()
			section, sectionRun = &caseResult{name: name}, cur()
			continue
		}
		if section != nil {
			if line == "failures:" || strings.HasPrefix(line, "test result: ") {
				flush()
			} else {
				sectionLines = append(sectionLines, line)
				continue
			}
		}
		if strings.HasPrefix(line, "test result: ") {
			cur().finished = true
			continue
		}
		if c, started, ok := testLine(line); ok {
			r := cur()
			if started {
				r.started = append(r.started, c.name)
			} else {
				r.cases = append(r.cases, c)
			}
		}
	}
	flush()
	for _, r := range runs {
		if r.doc {
			stableDocNames(r)
		}
	}
	return runs
}

// docTestName is rustdoc's name of a doc test: the file, the item, the
// line of the example, and what kind of example it is, if special.
var docTestName = regexp.MustCompile(`^(.* - .*) \(line (\d+)\)(.*)$`)

// stableDocNames names each doc test of r without its line number, which
// any edit above the example changes: "src/lib.rs - clamp (line 12)" is
// "src/lib.rs - clamp", so a fix that adds lines above it keeps its test's
// ID. An item with several examples numbers them in line order
// ("src/lib.rs - clamp (#2)").
func stableDocNames(r *binaryRun) {
	type example struct {
		name string
		line int
	}
	groups := map[string][]example{}
	for _, n := range append(caseNames(r.cases), r.started...) {
		if m := docTestName.FindStringSubmatch(n); m != nil {
			line, _ := strconv.Atoi(m[2])
			key := m[1] + m[3]
			groups[key] = append(groups[key], example{n, line})
		}
	}
	rename := map[string]string{}
	for key, exs := range groups {
		sort.Slice(exs, func(i, j int) bool { return exs[i].line < exs[j].line })
		for i, ex := range exs {
			rename[ex.name] = key
			if len(exs) > 1 {
				rename[ex.name] = fmt.Sprintf("%s (#%d)", key, i+1)
			}
		}
	}
	for i := range r.cases {
		if n, ok := rename[r.cases[i].name]; ok {
			r.cases[i].name = n
		}
	}
	for i, n := range r.started {
		if m, ok := rename[n]; ok {
			r.started[i] = m
		}
	}
}

func caseNames(cs []caseResult) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// docTestFilter is the filter that selects the doc test named name (a
// stable name): rustdoc matches filters as substrings of its own names,
// which hold the line and no ordinal.
func docTestFilter(name string) string {
	if i := strings.LastIndex(name, " (#"); i >= 0 && strings.HasSuffix(name, ")") {
		name = name[:i]
	}
	return strings.TrimSuffix(name, " - compile fail")
}

// attachDetail gives a failed case the captured output of its section.
func attachDetail(r *binaryRun, s caseResult) {
	for i := range r.cases {
		if r.cases[i].name == s.name && r.cases[i].detail == "" {
			r.cases[i].detail = s.detail
			return
		}
	}
}

// header reads cargo's "Running unittests src/lib.rs (target/…)",
// "Running tests/api.rs (target/…)" and "Doc-tests calc" lines.
func header(line string) (source string, doc bool, ok bool) {
	if strings.HasPrefix(line, "Doc-tests ") {
		return "src/lib.rs", true, true
	}
	rest, ok := strings.CutPrefix(line, "Running ")
	if !ok || !strings.HasSuffix(rest, ")") {
		return "", false, false
	}
	rest = strings.TrimPrefix(rest, "unittests ")
	src, _, ok := strings.Cut(rest, " (")
	if !ok || !strings.HasSuffix(src, ".rs") {
		return "", false, false
	}
	return src, false, true
}

// sectionHeader reads "---- name stdout ----", the start of a failed
// test's captured output.
func sectionHeader(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "---- ")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, " stdout ----")
	return name, ok && name != ""
}

// testLine reads "test name ... ok|FAILED|ignored[, reason]". A line that
// stops after "... " (the run ended inside the test, single-threaded)
// reports the test as started.
func testLine(line string) (c caseResult, started bool, ok bool) {
	rest, ok := strings.CutPrefix(line, "test ")
	if !ok {
		return caseResult{}, false, false
	}
	i := strings.Index(rest, " ... ")
	if i < 0 {
		if name, ok := strings.CutSuffix(rest, " ..."); ok {
			return caseResult{name: cleanName(name)}, true, true
		}
		return caseResult{}, false, false
	}
	c.name = cleanName(rest[:i])
	result := strings.TrimSpace(rest[i+len(" ... "):])
	switch {
	case result == "ok":
		c.outcome = verify.Pass
	case result == "FAILED":
		c.outcome = verify.Fail
	case result == "ignored" || strings.HasPrefix(result, "ignored, "):
		c.outcome = verify.Skip
		c.detail = strings.TrimPrefix(strings.TrimPrefix(result, "ignored"), ", ")
	case result == "":
		return c, true, true
	default:
		// Something the test printed uncaptured ran into the line; the
		// result is its last word.
		switch {
		case strings.HasSuffix(result, " ok"):
			c.outcome = verify.Pass
		case strings.HasSuffix(result, "FAILED"):
			c.outcome = verify.Fail
		default:
			return c, true, true
		}
	}
	return c, false, true
}

// cleanName drops the marks libtest puts after a name.
func cleanName(n string) string {
	n = strings.TrimSuffix(n, " - should panic")
	return strings.TrimSpace(n)
}

// excerpt keeps the first detailLines lines of s.
func excerpt(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) <= detailLines {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:detailLines], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-detailLines)
}

// compilerErrors is the part of cargo's output that says why a build
// failed: from the first error on, warnings before it left out.
func compilerErrors(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "error") {
			return excerpt(strings.Join(lines[i:], "\n"))
		}
	}
	return excerpt(out)
}
