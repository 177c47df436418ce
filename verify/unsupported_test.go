package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
)

// goOnly is scripted with the ownership of a Go adapter.
type goOnly struct{ scripted }

func (g *goOnly) Owns(p string) bool { return strings.HasSuffix(p, ".go") || p == "go.mod" }

func TestUnsupportedLanguage(t *testing.T) {
	g := &Gate{Adapters: []Adapter{&goOnly{}}}
	cases := map[string]string{
		"web/app.js": "JavaScript", "web/App.tsx": "TypeScript", "src/lib.rs": "Rust", "tests/it.rs": "Rust",
		"a/B.java": "Java", "x.kt": "Kotlin", "lib/x.rb": "Ruby", "c/x.c": "C", "c/x.h": "C", "c/x.cc": "C++",
		"x.cpp": "C++", "X.cs": "C#", "x.swift": "Swift", "x.php": "PHP", "x.scala": "Scala", "m.mjs": "JavaScript",
		"py/x.py": "Python", // no Python adapter in this gate
		// Owned, docs, data, config, test data: not unsupported.
		"calc/calc.go": "", "go.mod": "", "README.md": "", "web/config.json": "", "ci.yaml": "", "Cargo.toml": "",
		"logo.png": "", "calc/testdata/in.js": "", "tests/fixtures/page.ts": "", "scripts/release.sh": "",
	}
	for p, want := range cases {
		got, ok := g.unsupportedLanguage(p)
		if ok != (want != "") || got != want {
			t.Errorf("unsupportedLanguage(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
}

// TestGateUnsupportedOnlyRunsNothing: a change of JavaScript alone is
// error (unsupported) and no suite runs; beside owned code it is named
// and the verdict is the rest's.
func TestGateUnsupportedOnlyRunsNothing(t *testing.T) {
	js := &Change{Base: "b", Head: "h", Workspace: &dirs{}, Files: []FileChange{
		{Path: "web/app.js", Status: Modified, Base: []byte("a"), Head: []byte("b")},
		{Path: "web/app.test.js", Status: Added, Head: []byte("t")},
		{Path: "README.md", Status: Modified, Base: []byte("a"), Head: []byte("b")},
	}}
	a := &goOnly{scripted{ran: &runLog{}, pristine: outcomes(), base: outcomes(), head: outcomes(), old: outcomes()}}
	g := &Gate{Runner: nameRunner{}, Adapters: []Adapter{a}}
	rep, err := g.Check(context.Background(), js, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Error || rep.Reasons[0].Code != ReasonUnsupported || len(rep.Unsupported) != 2 || len(a.ran.dirs) != 0 {
		t.Fatalf("verdict %s reasons %+v unsupported %+v, suites ran in %v", rep.Verdict, rep.Reasons, rep.Unsupported, a.ran.dirs)
	}
	if !strings.Contains(rep.Reasons[0].Message, "JavaScript (web/app.js, web/app.test.js)") {
		t.Fatalf("the reason does not name the files: %s", rep.Reasons[0].Message)
	}
	js.Files = append(js.Files, FileChange{Path: "x.go", Status: Modified, Base: []byte("a"), Head: []byte("b")})
	rep, err = g.Check(context.Background(), js, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Green || rep.Reasons[0].Code != ReasonNoTestsChanged || len(rep.Unsupported) != 2 {
		t.Fatalf("beside Go code: verdict %s reasons %+v unsupported %+v", rep.Verdict, rep.Reasons, rep.Unsupported)
	}
}
