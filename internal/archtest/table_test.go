package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// tableRow is one row of the package table in docs/architecture.md.
type tableRow struct {
	line     int
	packages []string // patterns: "x" or "x/..."
	anything bool     // may import anything
	allowed  []string // patterns
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readTable parses the table under "## Packages and who may import whom".
func readTable(t *testing.T) []tableRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []tableRow
	in := false
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Packages and who may import whom"
			continue
		case !in || !strings.HasPrefix(line, "| `"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("docs/architecture.md:%d: a package row has %d cells, want 3", i+1, len(cells))
		}
		r := tableRow{line: i + 1}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			r.packages = append(r.packages, m[1])
		}
		may := strings.TrimSpace(cells[2])
		switch may {
		case "anything":
			r.anything = true
		case "nothing of bcode's":
		default:
			for _, m := range backticked.FindAllStringSubmatch(may, -1) {
				r.allowed = append(r.allowed, m[1])
			}
			if len(r.allowed) == 0 {
				t.Fatalf("docs/architecture.md:%d: %q names no package", i+1, may)
			}
		}
		rows = append(rows, r)
	}
	if len(rows) < 10 {
		t.Fatalf("docs/architecture.md: found %d package rows; is the table still under its heading?", len(rows))
	}
	return rows
}

// matches reports whether pattern ("x" or "x/...") covers p, and how
// specific the match is (longer is more specific; exact beats "...").
func matches(pattern, p string) (bool, int) {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		if p == base || strings.HasPrefix(p, base+"/") {
			return true, 2 * len(base)
		}
		return false, 0
	}
	return pattern == p, 2*len(pattern) + 1
}

// rowOf is the row whose pattern covers p most specifically.
func rowOf(rows []tableRow, p string) (tableRow, bool) {
	best, found, score := tableRow{}, false, -1
	for _, r := range rows {
		for _, pat := range r.packages {
			if ok, s := matches(pat, p); ok && s > score {
				best, found, score = r, true, s
			}
		}
	}
	return best, found
}

// TestPackageTable enforces the table of docs/architecture.md exactly:
// every package has a row, every import of bcode's own packages is one its
// row allows, and every row's packages exist.
func TestPackageTable(t *testing.T) {
	rows := readTable(t)
	graph := loadGraph(t)
	used := map[string]bool{}
	departed := map[string]bool{}
	for _, p := range graph {
		from := rel(p.ImportPath)
		r, ok := rowOf(rows, from)
		if !ok {
			t.Errorf("package %s has no row in the table of docs/architecture.md: add it (what it owns, what it may import)", from)
			continue
		}
		for _, pat := range r.packages {
			if ok, _ := matches(pat, from); ok {
				used[pat] = true
			}
		}
		if r.anything {
			continue
		}
		for _, imp := range p.Imports {
			if imp != mod && !strings.HasPrefix(imp, mod+"/") {
				continue
			}
			to := rel(imp)
			allowed := false
			for _, pat := range r.allowed {
				if ok, _ := matches(pat, to); ok {
					allowed = true
					break
				}
			}
			if !allowed && departures[from][to] != "" {
				allowed, departed[from+" -> "+to] = true, true
			}
			if !allowed {
				t.Errorf("%s imports %s, which its row (docs/architecture.md:%d) does not allow: allowed %v", from, to, r.line, r.allowed)
			}
		}
	}
	for from, tos := range departures {
		for to := range tos {
			if !departed[from+" -> "+to] {
				t.Errorf("%s no longer imports %s (or its row now allows it): delete it from departures in internal/archtest/table_test.go", from, to)
			}
		}
	}
	var stale []string
	for _, r := range rows {
		for _, pat := range r.packages {
			if !used[pat] {
				stale = append(stale, pat)
			}
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("the table of docs/architecture.md names packages that do not exist (or that a more specific row takes): %v", stale)
	}
}

// departures are the imports of cmd/bcode and server that their rows do
// not allow yet (issue 27: every surface holds engine/app and the root
// domain packages, nothing below), each with what still needs it and so
// what is left to move behind engine/app. The list only shrinks:
// TestPackageTable fails when a listed import is gone. It is empty, and
// stays so.
var departures = map[string]map[string]string{}

// sqlDepartures are the packages that still use database/sql outside the
// ledger (docs/architecture.md would name them); it is empty, and stays so.
var sqlDepartures = map[string]bool{}

func TestDatabaseSQLOnlyInTheLedger(t *testing.T) {
	for _, p := range loadGraph(t) {
		from := rel(p.ImportPath)
		if ok, _ := matches("engine/ledger/...", from); ok || sqlDepartures[from] {
			continue
		}
		for _, imp := range p.Imports {
			if imp == "database/sql" {
				t.Errorf("%s imports database/sql: only engine/ledger/... talks to the database", from)
			}
		}
	}
}
