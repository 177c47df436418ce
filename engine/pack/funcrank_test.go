package pack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/internal/testenv"
)

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

const histRepo = `
-- go.mod --
module example.com/hist

go 1.22
-- codec/encode.go --
package codec

// Encode writes v.
func Encode(v int) string { return "v" + string(rune('0'+v)) }
-- codec/decode.go --
package codec

// Decode reads what Encode wrote; nothing calls one from the other.
func Decode(s string) int { return int(s[1] - '0') }
-- codec/other.go --
package codec

func Unrelated() int { return 42 }
`

// Decode has no call edge to Encode; only the history says they change
// together. The pack must show it, say why, and list it as shown.
func TestHistoryPullsCoChangedFunction(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (apt-get install git)")
	}
	repo := writeRepo(t, histRepo)
	gitRun(t, repo, "init", "-q", "-b", "main")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "init")
	for i, pair := range [][2]string{{"1", "1"}, {"2", "2"}, {"3", "3"}} {
		enc := filepath.Join(repo, "codec/encode.go")
		dec := filepath.Join(repo, "codec/decode.go")
		e, _ := os.ReadFile(enc)
		d, _ := os.ReadFile(dec)
		os.WriteFile(enc, []byte(strings.Replace(string(e), "return \"v\"", "return \"v\" + \"\"", 1)), 0o644)
		os.WriteFile(dec, []byte(strings.Replace(string(d), "- '0')", "- '0') + 0", 1)), 0o644)
		_ = pair
		gitRun(t, repo, "commit", "-q", "-am", "change "+string(rune('a'+i)))
	}
	p := build(t, Input{Repo: repo, Budget: 2000, Selection: &engine.Selection{File: "codec/encode.go", StartLine: 4, EndLine: 4}})
	s := section(p, "Functions likely to change")
	if s == nil || !strings.Contains(s.Text, "codec/decode.go:3-4 (co-changed 4/4") {
		t.Fatalf("co-changed Decode missing or without its reason:\n%s", Render(p))
	}
	found := false
	for _, sh := range p.Shown() {
		if sh.File == "codec/decode.go" && sh.Name == "Decode" && sh.Form == FormBody {
			found = true
		}
	}
	if !found {
		t.Errorf("Shown() lacks Decode's body: %+v", p.Shown())
	}
	// Unrelated shares only the file's directory: same package, no call,
	// never changed with Encode after the first commit, so it ranks below.
	if i, j := strings.Index(Render(p), "func Decode"), strings.Index(Render(p), "func Unrelated"); j >= 0 && j < i {
		t.Errorf("Unrelated ranked above Decode:\n%s", Render(p))
	}
}

// Python through its own ast: callers, callees and reaching tests come out
// of the same ranked section as for Go, each with its reason.
func TestPythonThroughAST(t *testing.T) {
	testenv.Command(t, "/usr/bin/python3", "apt-get install python3")
	repo := writeRepo(t, pyRepo)
	p := build(t, Input{Repo: repo, Selection: &engine.Selection{File: "shop/cart.py", StartLine: 6, EndLine: 6}})
	out := Render(p)
	if !strings.Contains(out, "Python indexed with Python's own ast") {
		t.Fatalf("no note of the ast index:\n%s", out)
	}
	s := section(p, "Functions likely to change")
	for _, want := range []string{"shop/api.py:4-5 (caller)", "shop/cart.py:1-2 (callee, same file)"} {
		if s == nil || !strings.Contains(s.Text, want) {
			t.Errorf("functions section lacks %q:\n%s", want, out)
		}
	}
	// A test is a ring line: bodies are for the code a change edits.
	if r := section(p, ringTitle); r == nil || !strings.Contains(r.Text, "tests/test_cart.py:\n  4 test_add() — test, 1 calls") {
		t.Errorf("ring lacks the reaching test:\n%s", out)
	}
	if sel := section(p, "Selection"); sel == nil || !strings.Contains(sel.Reason, "add") {
		t.Errorf("selection not widened to its def:\n%s", out)
	}
}

func TestCompactSignature(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"func (v Version) IncMinor() Version", "(v Version) IncMinor()"},
		{"func NewVersion(v string) (*Version, error)", "NewVersion(v string)"},
		{"func Map[T any](xs []T, f func(T) T) []T", "Map[T any](xs []T, f func(T) T)"},
		{"def findall( self, string, pos=0, endpos=None, extra=(1, 2), evaluate_result=True ):", "findall(string, pos, endpos, extra, evaluate_result)"},
		{"async def fetch(cls):", "fetch()"},
		{"def f(x: int = 3) -> int:", "f(x: int) -> int"},
	} {
		if got := compactSignature(c.in, maxCompactSignature); got != c.want {
			t.Errorf("compactSignature(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := compactSignature("def f("+strings.Repeat("a, ", 40)+"b):", 20); got != "f(a, a, a, a, a, a, …" {
		t.Errorf("long signature not capped: %q", got)
	}
}

// At a small budget every ranked function is a ring line under its file,
// with its strongest reason, and the JSON lists it as a signature.
func TestRingAtSmallBudget(t *testing.T) {
	repo := writeRepo(t, shop)
	p := build(t, Input{Repo: repo, Budget: 1000, Selection: &engine.Selection{File: "store/store.go", StartLine: 10, EndLine: 10}})
	if p.Total > 1000 {
		t.Fatalf("pack of %d tokens over its budget of 1000", p.Total)
	}
	s := section(p, ringTitle)
	if s == nil {
		t.Fatalf("no ring section:\n%s", Render(p))
	}
	if !strings.Contains(s.Text, "mem/mem.go:\n") || !strings.Contains(s.Text, " — caller\n") {
		t.Errorf("ring lacks the caller's file heading or its reason:\n%s", s.Text)
	}
	if strings.Contains(s.Text, "```") {
		t.Errorf("a body in the ring at 1000 tokens:\n%s", s.Text)
	}
	n := 0
	for _, sh := range s.Symbols {
		if sh.Form != FormSignature {
			t.Errorf("ring symbol %+v not a signature", sh)
		}
		n++
	}
	if n < 3 {
		t.Errorf("ring shows %d functions, want >= 3:\n%s", n, Render(p))
	}
}

// bodyOrder offers as bodies only the non-test functions among the best 10
// ranks per 1,000 tokens, keeps every other function in rank order after
// them, and leaves the ranking as it is below minBodiesBudget.
func TestBodyOrder(t *testing.T) {
	var ranked []*scored
	for i := range 100 {
		ranked = append(ranked, &scored{sym: &codegraph.Symbol{ID: fmt.Sprint(i), Test: i%3 == 0}})
	}
	ids := func(s []*scored) string {
		var out []string
		for _, sc := range s {
			out = append(out, sc.sym.ID)
		}
		return strings.Join(out, " ")
	}
	order, n := bodyOrder(ranked, 4000)
	if len(order) != len(ranked) {
		t.Fatalf("bodyOrder lost functions: %d of %d", len(order), len(ranked))
	}
	for _, sc := range order[:n] {
		if sc.sym.Test {
			t.Errorf("a test offered as a body: %s", ids(order[:n]))
		}
	}
	if n != 26 || order[0].sym.ID != "1" || order[n-1].sym.ID != "38" || order[n].sym.ID != "0" {
		t.Errorf("at 4k: %d bodies %s, then %s", n, ids(order[:n]), ids(order[n:n+3]))
	}
	if _, n := bodyOrder(ranked, 8000); n != maxBodies {
		t.Errorf("at 8k: %d bodies, want %d", n, maxBodies)
	}
	if order, _ := bodyOrder(ranked, 1000); ids(order) != ids(ranked) {
		t.Errorf("below %d tokens the ranking changed: %s", minBodiesBudget, ids(order[:5]))
	}
}
