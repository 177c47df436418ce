//go:build linux

package main

import (
	"context"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/gateway/wire"
)

func newTestEditor(t *testing.T) (*editor, string) {
	t.Helper()
	dir := t.TempDir()
	e, err := newEditor(dir, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.root.Close() })
	return e, dir
}

func mustRun(t *testing.T, e *editor, a editorArgs) string {
	t.Helper()
	out, isErr := e.run(a)
	if isErr {
		t.Fatalf("%s %s: %s", a.Command, a.Path, out)
	}
	return out
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStrReplaceNeedsAUniqueExactAnchor(t *testing.T) {
	e, dir := newTestEditor(t)
	src := "package p\n\nfunc A() int { return 1 }\n\nfunc B() int { return 1 }\n"
	os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644)

	out, isErr := e.run(editorArgs{Command: "str_replace", Path: "p.go", OldStr: "return 1", NewStr: "return 2"})
	if !isErr || !strings.Contains(out, "occurs 2 times") || !strings.Contains(out, "lines 3, 5") {
		t.Errorf("ambiguous anchor: %s", out)
	}
	out, isErr = e.run(editorArgs{Command: "str_replace", Path: "p.go", OldStr: "func A() int {  return 1 }", NewStr: "x"})
	if !isErr || !strings.Contains(out, "does not occur") {
		t.Errorf("inexact anchor: %s", out)
	}
	if readFile(t, filepath.Join(dir, "p.go")) != src {
		t.Fatal("a refused str_replace changed the file")
	}
	mustRun(t, e, editorArgs{Command: "str_replace", Path: "p.go", OldStr: "func B() int { return 1 }", NewStr: "func B() int { return 2 }"})
	if got := readFile(t, filepath.Join(dir, "p.go")); !strings.Contains(got, "func B() int { return 2 }") || !strings.Contains(got, "func A() int { return 1 }") {
		t.Errorf("after edit:\n%s", got)
	}
	mustRun(t, e, editorArgs{Command: "undo_edit", Path: "p.go"})
	if readFile(t, filepath.Join(dir, "p.go")) != src {
		t.Error("undo did not restore the file")
	}
	if out, isErr := e.run(editorArgs{Command: "undo_edit", Path: "p.go"}); !isErr || !strings.Contains(out, "no edit") {
		t.Errorf("second undo: %s", out)
	}
}

func TestCreateInsertViewUndo(t *testing.T) {
	e, dir := newTestEditor(t)
	mustRun(t, e, editorArgs{Command: "create", Path: "sub/new.txt", FileText: "one\nthree\n"})
	if out, isErr := e.run(editorArgs{Command: "create", Path: "sub/new.txt", FileText: "x"}); !isErr || !strings.Contains(out, "already exists") {
		t.Errorf("create over a file: %s", out)
	}
	two := 1
	mustRun(t, e, editorArgs{Command: "insert", Path: "sub/new.txt", InsertLine: &two, NewStr: "two"})
	if got := readFile(t, filepath.Join(dir, "sub/new.txt")); got != "one\ntwo\nthree\n" {
		t.Errorf("insert: %q", got)
	}
	out := mustRun(t, e, editorArgs{Command: "view", Path: "sub/new.txt", ViewRange: []int{2, -1}})
	if out != "     2\ttwo\n     3\tthree\n" {
		t.Errorf("view range: %q", out)
	}
	if out := mustRun(t, e, editorArgs{Command: "view", Path: "."}); !strings.Contains(out, "sub/") {
		t.Errorf("dir view: %q", out)
	}
	bad := 9
	if out, isErr := e.run(editorArgs{Command: "insert", Path: "sub/new.txt", InsertLine: &bad, NewStr: "x"}); !isErr {
		t.Errorf("insert past the end: %s", out)
	}
	mustRun(t, e, editorArgs{Command: "undo_edit", Path: "sub/new.txt"})
	mustRun(t, e, editorArgs{Command: "undo_edit", Path: "sub/new.txt"})
	if _, err := os.Stat(filepath.Join(dir, "sub/new.txt")); !os.IsNotExist(err) {
		t.Errorf("undo of create should remove the file: %v", err)
	}
}

// TestEditorConfinement: paths and planted symbolic links cannot reach
// outside the worktree, for reading or writing.
func TestEditorConfinement(t *testing.T) {
	e, dir := newTestEditor(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "id_rsa")
	os.WriteFile(secret, []byte("PRIVATE"), 0o600)
	os.Symlink(secret, filepath.Join(dir, "key"))
	os.Symlink(outside, filepath.Join(dir, "out"))

	for _, a := range []editorArgs{
		{Command: "view", Path: "key"},
		{Command: "view", Path: "out/id_rsa"},
		{Command: "view", Path: "../" + filepath.Base(outside) + "/id_rsa"},
		{Command: "view", Path: secret},
		{Command: "str_replace", Path: "key", OldStr: "PRIVATE", NewStr: "owned"},
		{Command: "create", Path: "out/planted", FileText: "x"},
		{Command: "view", Path: "/etc/passwd"},
	} {
		out, isErr := e.run(a)
		if !isErr || strings.Contains(out, "PRIVATE") {
			t.Errorf("%s %s: not refused: %s", a.Command, a.Path, out)
		}
	}
	if readFile(t, secret) != "PRIVATE" {
		t.Error("the file outside the worktree was changed")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Error("a file was created outside the worktree")
	}
	// An absolute path inside the worktree and $WORKTREE/... are fine.
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("hello\n"), 0o644)
	mustRun(t, e, editorArgs{Command: "view", Path: filepath.Join(dir, "in.txt")})
	mustRun(t, e, editorArgs{Command: "view", Path: "$WORKTREE/in.txt"})
}

func TestTerminalTimeoutAndCap(t *testing.T) {
	dir := t.TempDir()
	term := &terminal{dir: dir, timeout: 10 * time.Second, cap: 1000}
	start := time.Now()
	out, isErr := term.run(context.Background(), terminalArgs{Command: "sleep 30 & sleep 30; echo never", TimeoutSeconds: 1})
	if !isErr || !strings.Contains(out, "timed out after 1s") || strings.Contains(out, "never") {
		t.Errorf("timeout: %q", out)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("timeout took %s (the process group was not killed?)", d)
	}
	out, isErr = term.run(context.Background(), terminalArgs{Command: "echo START; seq 1 100000; echo END >&2; exit 3"})
	if !isErr || !strings.Contains(out, "[exit code 3") || !strings.Contains(out, "START") || !strings.Contains(out, "END") || !strings.Contains(out, "bytes cut") {
		t.Errorf("capped output: %q", out)
	}
	if len(out) > 1200 {
		t.Errorf("output of %d bytes exceeds the cap", len(out))
	}
	out, isErr = term.run(context.Background(), terminalArgs{Command: "pwd; echo $WORKTREE"})
	if isErr || strings.Count(out, dir) != 2 {
		t.Errorf("working directory: %q", out)
	}
}

func TestTracker(t *testing.T) {
	tr := &tracker{}
	out, isErr := tr.run(trackerArgs{Command: "plan", Items: []planItem{{Title: "read the bug"}, {Title: "fix", Status: "in_progress"}}})
	if isErr || out != "1. [todo] read the bug\n2. [in_progress] fix\n" {
		t.Errorf("plan: %q", out)
	}
	if out, isErr = tr.run(trackerArgs{Command: "update", ID: 1, Status: "done"}); isErr || !strings.Contains(out, "1. [done]") {
		t.Errorf("update: %q", out)
	}
	if out, isErr = tr.run(trackerArgs{Command: "update", ID: 5, Status: "done"}); !isErr {
		t.Errorf("update of a missing item: %q", out)
	}
}

// TestExecRefusesInvalidCalls: a call with a gateway error or arguments
// outside the schema never runs.
func TestExecRefusesInvalidCalls(t *testing.T) {
	dir := t.TempDir()
	tb, err := newToolbox(dir, 5*time.Second, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	marker := filepath.Join(dir, "ran")
	for _, c := range []wire.ToolCall{
		{ID: "1", Name: "terminal", Arguments: json.RawMessage(`{"command":"touch ran"}`), Error: "unterminated <function=...>"},
		{ID: "2", Name: "terminal", Arguments: json.RawMessage(`{"command":"touch ran","sudo":true}`)},
		{ID: "3", Name: "terminal", Arguments: json.RawMessage(`{"cmd":"touch ran"}`)},
		{ID: "4", Name: "shell", Arguments: json.RawMessage(`{"command":"touch ran"}`)},
	} {
		out, isErr := tb.exec(context.Background(), c)
		if !isErr || !strings.Contains(out, "not run") {
			t.Errorf("call %s: %q", c.ID, out)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an invalid call was executed")
	}
}

func TestCondenseKeepsTheLastRoundAndThePlan(t *testing.T) {
	a := &agent{log: os.Stderr, nctx: 1000, tools: &toolbox{plan: &tracker{items: []planItem{{Title: "fix sum", Status: "in_progress"}}}}}
	a.msgs = []wire.ChatMessage{{Role: "system", Content: "sys"}, {Role: "user", Content: "task"}}
	a.head = 2
	for i := range 6 {
		id := "c" + string(rune('0'+i))
		a.msgs = append(a.msgs,
			wire.ChatMessage{Role: "assistant", ToolCalls: []wire.ToolCall{{ID: id, Name: "terminal", Arguments: json.RawMessage(`{"command":"go test"}`)}}},
			wire.ChatMessage{Role: "tool", ToolCallID: id, Content: "FAIL run " + id + "\n" + strings.Repeat("x", 600)})
	}
	if !a.nearLimit() {
		t.Fatalf("estimate %d should be near the limit of %d", a.estimate(), a.nctx)
	}
	if !a.condense(condenseTo) {
		t.Fatal("nothing condensed")
	}
	if a.estimate() > 600 {
		t.Errorf("estimate after condensing: %d", a.estimate())
	}
	last := a.msgs[len(a.msgs)-1]
	if last.ToolCallID != "c5" || a.msgs[len(a.msgs)-2].Role != "assistant" {
		t.Errorf("the last round was not kept whole: %+v", a.msgs[len(a.msgs)-2:])
	}
	sum := a.msgs[2].Content
	if !strings.Contains(sum, "turn 1: terminal") || !strings.Contains(sum, "FAIL run c0") || !strings.Contains(sum, "[in_progress] fix sum") {
		t.Errorf("summary:\n%s", sum)
	}
	for _, m := range a.msgs[3:] {
		if m.Role == "tool" && m.ToolCallID == "c0" {
			t.Error("an old round survived")
		}
	}
}

// TestBinaryIsStatic builds bcode-agent as the sandbox gets it and checks
// the ELF has no interpreter (no dynamic loader in a FROM-scratch image).
func TestBinaryIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "bcode-agent")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("bcode-agent is dynamically linked")
		}
	}
	out, _ := exec.Command(bin, "--bad-flag").CombinedOutput()
	if !strings.Contains(string(out), "flag provided but not defined") {
		t.Errorf("bad flag: %s", out)
	}
}
