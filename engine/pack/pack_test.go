package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// The secret is assembled at run time so this file itself holds no token a
// scanner would flag.
var plantedSecret = "ghp_" + "R3aLt0k3nV4lu3F0rT3st1ngPurp0s3sX9Zq"

const shop = `
-- go.mod --
module example.com/shop

go 1.22
-- AGENTS.md --
Run go test ./... before you finish. Never edit generated files.
-- store/store.go --
package store

// Store keeps things.
type Store interface {
	Get(key string) (string, bool)
	Put(key, value string)
}

// Normalize is called from other packages.
func Normalize(key string) string { return "k:" + key }
-- mem/mem.go --
package mem

import "example.com/shop/store"

// Map is an in-memory Store.
type Map struct{ m map[string]string }

func New() *Map { return &Map{m: map[string]string{}} }

func (s *Map) Get(key string) (string, bool) { v, ok := s.m[store.Normalize(key)]; return v, ok }

func (s *Map) Put(key, value string) {
	token := "SECRET_PLACEHOLDER"
	_ = token
	s.m[store.Normalize(key)] = value
}
-- disk/disk.go --
package disk

// File is another Store, in a package that does not import store.
type File struct{ path string }

func (f File) Get(key string) (string, bool) { return "", false }

func (f File) Put(key, value string) {}
-- app/app.go --
package app

import (
	"example.com/shop/mem"
	"example.com/shop/store"
)

// Run stores a value and reads it back through the interface.
func Run(s store.Store) string {
	s.Put("a", "1")
	v, _ := s.Get("a")
	return v
}

func Main() string { return Run(mem.New()) }
-- app/app_test.go --
package app

import "testing"

func TestMain_(t *testing.T) {
	if Main() != "1" {
		t.Fatal("bad")
	}
}
`

func writeRepo(t *testing.T, archive string) string {
	t.Helper()
	dir := t.TempDir()
	writeArchive(t, dir, archive)
	return dir
}

func writeArchive(t *testing.T, dir, archive string) {
	t.Helper()
	archive = strings.ReplaceAll(archive, "SECRET_PLACEHOLDER", plantedSecret)
	for _, f := range txtar.Parse([]byte(archive)).Files {
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func scanner(t *testing.T) *secrets.Scanner {
	t.Helper()
	s, err := secrets.NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func build(t *testing.T, in Input) *Pack {
	t.Helper()
	if in.Redactor == nil {
		in.Redactor = scanner(t)
	}
	p, err := Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func section(p *Pack, prefix string) *Section {
	for i := range p.Sections {
		if strings.HasPrefix(p.Sections[i].Title, prefix) {
			return &p.Sections[i]
		}
	}
	return nil
}

func TestCallersAcrossPackages(t *testing.T) {
	repo := writeRepo(t, shop)
	p := build(t, Input{Repo: repo, Selection: &engine.Selection{File: "store/store.go", StartLine: 10, EndLine: 10}})
	s := section(p, "Functions likely to change")
	if s == nil {
		t.Fatalf("no functions section:\n%s", Render(p))
	}
	for _, want := range []string{"mem/mem.go:10-10 (caller", "func (s *Map) Get(key string)", "mem/mem.go:12-16 (caller"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("callers section lacks %q:\n%s", want, s.Text)
		}
	}
	if sel := section(p, "Selection"); sel == nil || !strings.Contains(sel.Text, `func Normalize(key string) string { return "k:" + key }`) {
		t.Errorf("selection section lacks the enclosing declaration:\n%s", Render(p))
	}
	if r := section(p, "Repository rules"); r == nil || !strings.Contains(r.Text, "Run go test ./...") {
		t.Errorf("rules from AGENTS.md missing:\n%s", Render(p))
	}
	// Tests reach Normalize through Main → Run → Store.Put → Map.Put; a
	// test is a ring line (bodies are for the code a change edits).
	if r := section(p, ringTitle); r == nil || !strings.Contains(r.Text, "app/app_test.go:\n  5 TestMain_(t *testing.T) — test, 4 calls") {
		t.Errorf("reaching test missing:\n%s", Render(p))
	}
}

func TestInterfaceImplementations(t *testing.T) {
	repo := writeRepo(t, shop)
	p := build(t, Input{Repo: repo, Selection: &engine.Selection{File: "app/app.go", StartLine: 10, EndLine: 11}})
	s := section(p, "Types and interfaces")
	if s == nil {
		t.Fatalf("no types section:\n%s", Render(p))
	}
	for _, want := range []string{"type Store interface", "implemented by `disk.File` — disk/disk.go:3", "implemented by `mem.Map` — mem/mem.go:5"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("types section lacks %q:\n%s", want, s.Text)
		}
	}
	// Run calls Store.Put; dispatch makes both implementations callees.
	c := section(p, "Functions likely to change")
	for _, want := range []string{"func (f File) Put(key, value string) {}", "func (s *Map) Put(key, value string) {"} {
		if c == nil || !strings.Contains(c.Text, want) {
			t.Errorf("callees lack implementation %q:\n%s", want, Render(p))
		}
	}
}

func TestSymlinkOutsideRepoIsNotRead(t *testing.T) {
	repo := writeRepo(t, shop)
	outside := t.TempDir()
	hostFile := filepath.Join(outside, "host.md")
	const hostText = "HOST-ONLY-CONTENT-never-in-a-pack"
	if err := os.WriteFile(hostFile, []byte(hostText+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostGo := filepath.Join(outside, "host.go")
	if err := os.WriteFile(hostGo, []byte("package app\n\n// "+hostText+"\nfunc Stolen() string { return Main() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(repo, "AGENTS.md"))
	for link, target := range map[string]string{"AGENTS.md": hostFile, "CLAUDE.md": hostFile, "app/stolen.go": hostGo} {
		if err := os.Symlink(target, filepath.Join(repo, link)); err != nil {
			t.Fatal(err)
		}
	}
	p := build(t, Input{Repo: repo, Goal: "Stolen Main", Selection: &engine.Selection{File: "app/app.go", StartLine: 15, EndLine: 15}})
	out := Render(p)
	if strings.Contains(out, hostText) || strings.Contains(out, "Stolen()") {
		t.Fatalf("content outside the repository reached the pack:\n%s", out)
	}
	for _, want := range []string{"AGENTS.md not read", "not read (symbolic links, or over 16 MiB): app/stolen.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("pack does not say %q:\n%s", want, out)
		}
	}
	_, err := Build(context.Background(), Input{Repo: repo, Redactor: scanner(t), Selection: &engine.Selection{File: "AGENTS.md", StartLine: 1, EndLine: 1}})
	if !errors.Is(err, ErrBadSelection) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("selecting a symlinked file: err = %v, want a bad-selection error naming the link", err)
	}
}

func TestSecretIsRedacted(t *testing.T) {
	repo := writeRepo(t, shop)
	p := build(t, Input{Repo: repo, Selection: &engine.Selection{File: "mem/mem.go", StartLine: 13, EndLine: 14}})
	out := Render(p)
	if strings.Contains(out, plantedSecret) {
		t.Fatalf("secret leaked into the pack:\n%s", out)
	}
	if !strings.Contains(out, "[REDACTED:") || !strings.Contains(out, "secret(s) redacted") {
		t.Fatalf("pack neither shows the redaction nor notes it:\n%s", out)
	}
	js, err := JSON(p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js, []byte(plantedSecret)) {
		t.Fatal("secret leaked into the JSON")
	}
}

// big is one generated module shared by the budget tests, indexed once
// into store (indexing 30 packages is most of these tests' time).
var big struct {
	once  sync.Once
	dir   string
	store *codegraph.MemoryStore
}

func TestMain(m *testing.M) {
	code := m.Run()
	if big.dir != "" {
		os.RemoveAll(big.dir)
	}
	os.Exit(code)
}

// bigRepo returns a module large enough that 1k and 4k budgets must cut,
// and the store its index is kept in.
func bigRepo(t *testing.T) (string, *codegraph.MemoryStore) {
	t.Helper()
	big.once.Do(func() {
		dir, err := os.MkdirTemp("", "bcode-pack-big-")
		if err != nil {
			t.Fatal(err)
		}
		writeArchive(t, dir, bigArchive())
		big.dir, big.store = dir, &codegraph.MemoryStore{}
	})
	if big.dir == "" {
		t.Fatal("generating the big repository failed earlier")
	}
	return big.dir, big.store
}

func bigArchive() string {
	var b strings.Builder
	b.WriteString("-- go.mod --\nmodule example.com/big\n\ngo 1.22\n")
	for p := range 30 {
		fmt.Fprintf(&b, "-- p%d/p%d.go --\npackage p%d\n\n", p, p, p)
		if p > 0 {
			fmt.Fprintf(&b, "import \"example.com/big/p%d\"\n\n", p-1)
		}
		for f := range 15 {
			fmt.Fprintf(&b, "// F%d does step %d of package %d, with a comment long enough to cost tokens.\nfunc F%d(x int) int {\n", f, f, p, f)
			fmt.Fprintf(&b, "\ty := x*%d + %d\n\tif y > 100 {\n\t\ty -= %d\n\t}\n", f+1, p, f)
			if p > 0 {
				fmt.Fprintf(&b, "\ty += p%d.F%d(y)\n", p-1, (f+1)%15)
			}
			if f > 0 {
				fmt.Fprintf(&b, "\ty += F%d(y - 1)\n", f-1)
			}
			b.WriteString("\treturn y\n}\n\n")
		}
		fmt.Fprintf(&b, "-- p%d/p%d_test.go --\npackage p%d\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) {\n\tif F14(1) == 0 {\n\t\tt.Fatal(\"zero\")\n\t}\n}\n", p, p, p)
	}
	return b.String()
}

func TestBudgetRespected(t *testing.T) {
	repo, store := bigRepo(t)
	red := scanner(t)
	sel := &engine.Selection{File: "p6/p6.go", StartLine: 40, EndLine: 42}
	for _, budget := range []int{1000, 4000, 8000} {
		p := build(t, Input{Repo: repo, Store: store, Goal: "make F3 faster", Selection: sel, Budget: budget, Redactor: red})
		if p.Total > budget || p.Total <= 0 {
			t.Fatalf("budget %d: total %d", budget, p.Total)
		}
		// The total is the count of the whole rendering, not a sum of parts.
		if n := EstimateTokens(Render(p)); n != p.Total {
			t.Fatalf("budget %d: Total %d but the rendering counts %d", budget, p.Total, n)
		}
		if budget < 8000 && len(p.Cut) == 0 {
			t.Fatalf("budget %d: nothing reported cut for a repo this size", budget)
		}
		if budget == 1000 && p.Total < 600 {
			t.Fatalf("budget 1000 used only %d tokens: the fitting wastes the budget", p.Total)
		}
		sum := 0
		for _, s := range p.Sections {
			if s.Tokens <= 0 || s.Reason == "" {
				t.Fatalf("budget %d: section %q without tokens or reason", budget, s.Title)
			}
			sum += s.Tokens
		}
		if sum > budget {
			t.Fatalf("budget %d: sections sum to %d", budget, sum)
		}
		if section(p, "Selection") == nil {
			t.Fatalf("budget %d: the selection was cut", budget)
		}
	}
}

func TestSamePackTwice(t *testing.T) {
	repo, store := bigRepo(t)
	red := scanner(t)
	in := Input{Repo: repo, Store: store, Goal: "F3 overflow", Selection: &engine.Selection{File: "p3/p3.go", StartLine: 30, EndLine: 31}, Budget: 3000, Redactor: red}
	a, b := build(t, in), build(t, in)
	if Render(a) != Render(b) {
		t.Fatal("two builds of the same input rendered differently")
	}
	ja, _ := JSON(a)
	jb, _ := JSON(b)
	if !bytes.Equal(ja, jb) {
		t.Fatal("two builds of the same input gave different JSON")
	}
}

func TestBadSelections(t *testing.T) {
	repo := writeRepo(t, shop)
	red := scanner(t)
	for _, sel := range []engine.Selection{
		{File: "../etc/passwd", StartLine: 1, EndLine: 1},
		{File: "/etc/passwd", StartLine: 1, EndLine: 1},
		{File: "app/app.go", StartLine: 5, EndLine: 2},
		{File: "app/app.go", StartLine: 1, EndLine: 999},
		{File: "app/missing.go", StartLine: 1, EndLine: 1},
	} {
		_, err := Build(context.Background(), Input{Repo: repo, Selection: &sel, Redactor: red})
		if !errors.Is(err, ErrBadSelection) {
			t.Errorf("selection %+v: err = %v, want ErrBadSelection", sel, err)
		}
	}
	if _, err := Build(context.Background(), Input{Repo: filepath.Join(repo, "nope"), Redactor: red}); !errors.Is(err, ErrNotDir) {
		t.Errorf("missing repo: err = %v", err)
	}
	if _, err := Build(context.Background(), Input{Repo: repo, Budget: 50, Redactor: red}); err == nil {
		t.Error("a 50-token budget must be refused")
	}
}

// history is an in-memory TaskHistory holding one task.
type history struct {
	task     engine.Task
	attempts []engine.Attempt
	events   []engine.Event
}

func (h *history) Task(_ context.Context, id string) (*engine.Task, error) {
	if id != h.task.ID {
		return nil, engine.ErrNotFound
	}
	t := h.task
	return &t, nil
}
func (h *history) Events(context.Context, string, int64, int) ([]engine.Event, error) {
	return h.events, nil
}
func (h *history) Attempts(context.Context, string) ([]engine.Attempt, error) { return h.attempts, nil }

func TestTaskHistory(t *testing.T) {
	repo := writeRepo(t, shop)
	h := &history{
		task: engine.Task{ID: "t1", Goal: "make Put idempotent", Status: engine.TaskRunning},
		attempts: []engine.Attempt{
			{Number: 1, Status: engine.AttemptFinished, Verdict: "rejected", Note: "tried caching in Normalize: broke disk"},
			{Number: 2, Status: engine.AttemptInterrupted},
		},
		events: []engine.Event{
			{Seq: 4, TaskID: "t1", Attempt: 1, Kind: "verification.failed", Data: json.RawMessage(`{"reason":"TestMain_ failed"}`)},
			{Seq: 5, TaskID: "t1", Kind: "attempt.started"},
		},
	}
	p := build(t, Input{Repo: repo, TaskID: "t1", Tasks: h, Selection: &engine.Selection{File: "mem/mem.go", StartLine: 13, EndLine: 13}})
	s := section(p, "Task history")
	if s == nil {
		t.Fatalf("no history:\n%s", Render(p))
	}
	for _, want := range []string{"make Put idempotent", "attempt 1: finished, verdict rejected", "tried caching in Normalize: broke disk", "verification.failed", "TestMain_ failed"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("history lacks %q:\n%s", want, s.Text)
		}
	}
	if strings.Contains(s.Text, "attempt.started") {
		t.Errorf("history shows non-failure events:\n%s", s.Text)
	}
	p = build(t, Input{Repo: repo, TaskID: "t1"})
	if s := section(p, "Task history"); s == nil || !strings.Contains(s.Text, "no ledger") {
		t.Errorf("without a ledger the section must say so:\n%s", Render(p))
	}
}

func TestLlamaServerCounter(t *testing.T) {
	// A /tokenize that counts whitespace-separated words, as a stand-in
	// for llama-server's endpoint shape, behind a /props with
	// llama-server's fields.
	srv := httptest.NewServer(fakeLlamaServer(`{"default_generation_settings":{"n_ctx":16384},"total_slots":1,"build_info":"b1234-test"}`))
	defer srv.Close()
	ctx := context.Background()
	c, note := NewCounter(ctx, srv.URL, time.Second)
	if _, ok := c.(*LlamaServer); !ok {
		t.Fatalf("reachable endpoint not used: %s", note)
	}
	if !strings.Contains(note, "tokens counted by llama-server /tokenize at "+srv.URL) || !strings.Contains(note, "b1234-test") {
		t.Errorf("note %q does not name the server and its build", note)
	}
	repo, store := bigRepo(t)
	p := build(t, Input{Repo: repo, Store: store, Budget: 1000, Counter: c, Selection: &engine.Selection{File: "p2/p2.go", StartLine: 20, EndLine: 20}})
	words := len(strings.Fields(Render(p)))
	if p.Total != words || p.Total > 1000 {
		t.Fatalf("total %d, rendering has %d words, budget 1000", p.Total, words)
	}
	if p.Total < 800 {
		t.Fatalf("with a real counter the pack should use the room the estimate leaves: total %d of 1000", p.Total)
	}
	c, note = NewCounter(ctx, "http://127.0.0.1:1", 200*time.Millisecond)
	if _, ok := c.(Estimate); !ok || !strings.Contains(note, "not reachable") {
		t.Fatalf("unreachable endpoint: %T, %q", c, note)
	}
}

// TestCounterOnlyTrustsLlamaServer: a server whose /tokenize answers but
// whose /props is missing, not JSON, or without llama-server's fields is
// not counted with: the pack is sized by the estimate and says why.
func TestCounterOnlyTrustsLlamaServer(t *testing.T) {
	for name, props := range map[string]string{
		"no /props":         "",
		"not JSON":          "<html>hello</html>",
		"another server":    `{"model":"gpt","version":"1"}`,
		"fields wrong type": `{"default_generation_settings":"x","total_slots":"one"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(fakeLlamaServer(props))
			defer srv.Close()
			c, note := NewCounter(context.Background(), srv.URL, time.Second)
			if _, ok := c.(Estimate); !ok || !strings.Contains(note, "tokens estimated: the server at "+srv.URL+" is not llama-server") {
				t.Fatalf("counter %T, note %q; want the estimate, saying the server is not llama-server", c, note)
			}
		})
	}
}

// fakeLlamaServer answers /tokenize with one token per word and /props
// with props ("": 404, as a server without it).
func fakeLlamaServer(props string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/props":
			if props == "" {
				http.NotFound(w, r)
				return
			}
			io.WriteString(w, props)
		case "/tokenize":
			var req struct{ Content string }
			if json.NewDecoder(r.Body).Decode(&req) != nil {
				http.Error(w, "bad", http.StatusBadRequest)
				return
			}
			toks := make([]int, len(strings.Fields(req.Content)))
			json.NewEncoder(w).Encode(map[string]any{"tokens": toks})
		default:
			http.NotFound(w, r)
		}
	})
}

const pyRepo = `
-- shop/cart.py --
def normalize(key):
    return "k:" + key


def add(cart, key):
    cart[normalize(key)] = cart.get(normalize(key), 0) + 1
    return cart
-- shop/api.py --
from shop.cart import add


def handle(request):
    return add({}, request)
-- tests/test_cart.py --
from shop.cart import add, normalize


def test_add():
    assert add({}, "x") == {"k:x": 1}


def test_normalize():
    assert normalize("a") == "k:a"
`

// noPython makes the ast index find no interpreter, for the tests of the
// language-server and text-search fallbacks.
func noPython(t *testing.T) {
	saved := codegraph.PythonInterpreters
	codegraph.PythonInterpreters = []string{"/nonexistent/python3"}
	t.Cleanup(func() { codegraph.PythonInterpreters = saved })
}

func TestPythonWithoutServerFallsBack(t *testing.T) {
	noPython(t)
	repo := writeRepo(t, pyRepo)
	p := build(t, Input{Repo: repo, LanguageServers: [][]string{{"no-such-language-server-bcode"}},
		Selection: &engine.Selection{File: "shop/cart.py", StartLine: 6, EndLine: 6}})
	out := Render(p)
	if !strings.Contains(out, "Python language server unavailable") || !strings.Contains(out, "text search") {
		t.Fatalf("pack does not say the server is missing:\n%s", out)
	}
	s := section(p, "Related files")
	if s == nil || !strings.Contains(s.Text, "shop/api.py") || !strings.Contains(s.Text, "tests/test_cart.py") {
		t.Fatalf("text search did not find the users of add:\n%s", out)
	}
}

func TestPythonThroughPyright(t *testing.T) {
	testenv.Command(t, "pyright-langserver", "install it with `npm i -g pyright`")
	noPython(t)
	repo := writeRepo(t, pyRepo)
	p := build(t, Input{Repo: repo, Selection: &engine.Selection{File: "shop/cart.py", StartLine: 6, EndLine: 6}})
	out := Render(p)
	c := section(p, "Callers and callees")
	if c == nil || !strings.Contains(c.Text, "shop/api.py:4-5 (caller handle)") || !strings.Contains(c.Text, "(callee normalize)") {
		t.Fatalf("call hierarchy missing:\n%s", out)
	}
	ts := section(p, "Tests that reach")
	if ts == nil || !strings.Contains(ts.Text, "def test_add():") || strings.Contains(ts.Text, "def test_normalize") {
		t.Fatalf("tests section wrong:\n%s", out)
	}
}
