package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/bcode-dev/bcode"

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func loadGraph(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports", mod+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func rel(p string) string {
	if p == mod {
		return "."
	}
	return strings.TrimPrefix(p, mod+"/")
}

// under reports whether p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// rule forbids importers matching from (and not exempt) to import anything
// matching to. Only production imports count; tests may reach further.
type rule struct {
	why    string
	from   func(p string) bool
	exempt func(p string) bool
	to     func(imp string) bool
}

func TestImportRules(t *testing.T) {
	own := func(imp string) (string, bool) {
		if imp == mod || strings.HasPrefix(imp, mod+"/") {
			return rel(imp), true
		}
		return "", false
	}
	ownUnder := func(dir string) func(string) bool {
		return func(imp string) bool { r, ok := own(imp); return ok && under(r, dir) }
	}
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	rules := []rule{
		{why: "nothing imports a command", from: all, exempt: none, to: ownUnder("cmd")},
		{why: "only commands (and bcode bench perf's LSP table, a client of bcode-ls as an editor is) import the LSP server",
			from: func(p string) bool { return !under(p, "server") }, exempt: func(p string) bool { return under(p, "cmd") || p == "engine/bench/perf" },
			to: ownUnder("server")},
		{why: "verify never imports the engine", from: func(p string) bool { return under(p, "verify") }, exempt: none, to: ownUnder("engine")},
		{why: "sandbox never imports the engine or verify", from: func(p string) bool { return under(p, "sandbox") }, exempt: none,
			to: func(imp string) bool { return ownUnder("engine")(imp) || ownUnder("verify")(imp) }},
		{why: "the engine's root package imports nothing of bcode's", from: func(p string) bool { return p == "engine" }, exempt: none,
			to: func(imp string) bool { _, ok := own(imp); return ok }},
		{why: "the sandbox's root package imports nothing of bcode's", from: func(p string) bool { return p == "sandbox" }, exempt: none,
			to: func(imp string) bool { _, ok := own(imp); return ok }},
		{why: "config is a leaf", from: func(p string) bool { return p == "config" }, exempt: none,
			to: func(imp string) bool { _, ok := own(imp); return ok }},
		{why: "only sandbox/docker talks to Docker", from: all, exempt: func(p string) bool { return under(p, "sandbox/docker") },
			to: func(imp string) bool { return strings.HasPrefix(imp, "github.com/docker/") }},
		{why: "only the server speaks the LSP libraries", from: all, exempt: func(p string) bool { return under(p, "server") },
			to: func(imp string) bool { return strings.HasPrefix(imp, "go.lsp.dev/") }},
		{why: "only verify/secrets uses gitleaks", from: all, exempt: func(p string) bool { return under(p, "verify/secrets") },
			to: func(imp string) bool { return strings.HasPrefix(imp, "github.com/zricethezav/gitleaks") }},
		{why: "only the ledger opens SQLite", from: all, exempt: func(p string) bool { return under(p, "engine/ledger") },
			to: func(imp string) bool { return strings.HasPrefix(imp, "modernc.org/sqlite") }},
		{why: "only the ledger talks to PostgreSQL", from: all, exempt: func(p string) bool { return under(p, "engine/ledger") },
			to: func(imp string) bool { return strings.HasPrefix(imp, "github.com/jackc/") }},
	}
	for _, p := range loadGraph(t) {
		from := rel(p.ImportPath)
		for _, r := range rules {
			if !r.from(from) || r.exempt(from) {
				continue
			}
			for _, imp := range p.Imports {
				if r.to(imp) {
					t.Errorf("%s imports %s: %s", from, imp, r.why)
				}
			}
		}
	}
}

// TestRulesBite proves the rules are not vacuous: the graph really has the
// packages and edges the rules speak of.
func TestRulesBite(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range loadGraph(t) {
		seen[rel(p.ImportPath)] = true
	}
	for _, want := range []string{"engine", "sandbox", "verify", "config", "cmd/bcode"} {
		if !seen[want] {
			t.Errorf("package %s not found: the architecture rules would check nothing", want)
		}
	}
}
