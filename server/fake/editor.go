// Package fake is an in-process fake editor for bcode-ls: it builds a small
// real git repository from a txtar fixture, starts the real server on one
// end of a pipe, and talks LSP to it from the other end the way an editor
// does (initialize, open, edit, save, code actions, commands), recording
// everything the server sends back. Tests and benchmarks drive it.
package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/lsp"
)

// Repo writes a txtar fixture into a new git repository under t.TempDir():
// every file is committed on branch main as the base; files under
// "worktree/" are then written over the checkout without committing, as an
// uncommitted change. It returns the repository's directory.
func Repo(t testing.TB, fixture []byte) string {
	t.Helper()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	ar := txtar.Parse(fixture)
	var later []txtar.File
	for _, f := range ar.Files {
		if rest, ok := strings.CutPrefix(f.Name, "worktree/"); ok {
			later = append(later, txtar.File{Name: rest, Data: f.Data})
			continue
		}
		writeFile(t, dir, f.Name, f.Data)
	}
	Git(t, dir, "init", "-q", "-b", "main")
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "-m", "base")
	for _, f := range later {
		writeFile(t, dir, f.Name, f.Data)
	}
	return dir
}

// Git runs git in dir with a fixed identity and no user configuration.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=fake", "-c", "user.email=fake@localhost", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeFile(t testing.TB, dir, name string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Progress is one $/progress report the editor received.
type Progress = lsp.Progress

// Notification is one custom notification the editor received.
type Notification = lsp.Message

// Editor is the fake editor connected to a server: an lsp.ClientSession
// over an in-process pipe, with an editor's buffers and answers.
type Editor struct {
	Dir  string
	Conn *lsp.ClientConn

	s *lsp.ClientSession

	mu       sync.Mutex
	buffers  map[string]string
	versions map[string]int32

	// ShowDocument is what the editor answers window/showDocument with.
	ShowDocument bool
	// Answer is the action the editor picks in window/showMessageRequest
	// ("" dismisses it). Set it before the server asks.
	Answer string
}

// Config says what the fake editor announces.
type Config struct {
	NoProgress, NoShowDocument, NoTextDocumentContent bool
	// InitializationOptions are sent as they are (bcode's settings).
	InitializationOptions any
}

// Connect starts the real server in-process on one end of a pipe and
// connects an editor to it. The server stops when the test ends.
func Connect(t testing.TB, dir string, opts server.Options) *Editor {
	t.Helper()
	srvEnd, cliEnd := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, srvEnd, opts) }()
	e := &Editor{Dir: dir, buffers: map[string]string{}, versions: map[string]int32{}, ShowDocument: true}
	e.s = lsp.NewClientSession(ctx, cliEnd, lsp.SessionOptions{Answer: e.answer})
	e.Conn = e.s.Conn
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		e.s.Shutdown(sctx)
		select {
		case <-done:
		case <-sctx.Done():
			t.Errorf("bcode-ls did not stop after exit")
		}
		cancel()
		e.Conn.Close()
	})
	return e
}

// Initialize sends initialize and initialized for the editor's directory.
func (e *Editor) Initialize(ctx context.Context, cfg Config) (json.RawMessage, error) {
	params := map[string]any{
		"processId":  os.Getpid(),
		"rootUri":    lsp.FileURI(e.Dir),
		"clientInfo": map[string]any{"name": "bcode fake editor"},
		"capabilities": map[string]any{
			"window": map[string]any{
				"workDoneProgress": !cfg.NoProgress,
				"showDocument":     map[string]any{"support": !cfg.NoShowDocument},
			},
			"workspace": map[string]any{},
			"textDocument": map[string]any{
				"publishDiagnostics": map[string]any{"relatedInformation": true},
				"codeAction":         map[string]any{"dataSupport": true},
			},
		},
	}
	if cfg.InitializationOptions != nil {
		params["initializationOptions"] = cfg.InitializationOptions
	}
	if !cfg.NoTextDocumentContent {
		params["capabilities"].(map[string]any)["workspace"] = map[string]any{"textDocumentContent": map[string]any{"dynamicRegistration": false}}
	}
	return e.s.Initialize(ctx, params)
}

// URI is the file: URI of a repository-relative path.
func (e *Editor) URI(rel string) string {
	return lsp.FileURI(filepath.Join(e.Dir, filepath.FromSlash(rel)))
}

// Open opens a file from disk in the editor.
func (e *Editor) Open(ctx context.Context, rel string) error {
	b, err := os.ReadFile(filepath.Join(e.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.buffers[rel] = string(b)
	e.versions[rel] = 1
	e.mu.Unlock()
	return e.Conn.Notify(ctx, "textDocument/didOpen", map[string]any{
		"textDocument": lsp.TextDocumentItem{URI: e.URI(rel), LanguageID: "go", Version: 1, Text: string(b)},
	})
}

// Edit replaces old with new in the open buffer (once; old must occur),
// sending an incremental change with a UTF-16 range as editors do.
func (e *Editor) Edit(ctx context.Context, rel, old, new string) error {
	e.mu.Lock()
	text, ok := e.buffers[rel]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("%s is not open", rel)
	}
	i := strings.Index(text, old)
	if i < 0 {
		e.mu.Unlock()
		return fmt.Errorf("%q not found in %s", old, rel)
	}
	start, end := Pos(text, i), Pos(text, i+len(old))
	e.buffers[rel] = text[:i] + new + text[i+len(old):]
	e.versions[rel]++
	v := e.versions[rel]
	e.mu.Unlock()
	return e.Conn.Notify(ctx, "textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": e.URI(rel), "version": v},
		"contentChanges": []lsp.ContentChange{{Range: &lsp.Range{Start: start, End: end}, Text: new}},
	})
}

// Save writes the buffer to disk and sends didSave.
func (e *Editor) Save(ctx context.Context, rel string) error {
	e.mu.Lock()
	text, ok := e.buffers[rel]
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s is not open", rel)
	}
	if err := os.WriteFile(filepath.Join(e.Dir, filepath.FromSlash(rel)), []byte(text), 0o644); err != nil {
		return err
	}
	return e.Conn.Notify(ctx, "textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": e.URI(rel)}})
}

// Buffer is the editor's text of an open file.
func (e *Editor) Buffer(rel string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.buffers[rel]
}

// Pos is the LSP position (UTF-16) of byte offset off in text.
func Pos(text string, off int) lsp.Position {
	line := strings.Count(text[:off], "\n")
	ls := strings.LastIndexByte(text[:off], '\n') + 1
	units := 0
	for _, r := range text[ls:off] {
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	return lsp.Position{Line: uint32(line), Character: uint32(units)}
}

// CodeActions asks for the actions at a range, sending the diagnostics the
// editor holds there (as editors do).
func (e *Editor) CodeActions(ctx context.Context, rel string, r lsp.Range, diags []lsp.Diagnostic) ([]lsp.CodeAction, error) {
	if diags == nil {
		diags = []lsp.Diagnostic{}
	}
	var out []lsp.CodeAction
	err := e.Conn.Call(ctx, "textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": e.URI(rel)},
		"range":        r,
		"context":      map[string]any{"diagnostics": diags},
	}, &out)
	return out, err
}

// Execute runs a command, decoding its result into result.
func (e *Editor) Execute(ctx context.Context, c lsp.Command, result any) error {
	args := c.Arguments
	if args == nil {
		args = []json.RawMessage{}
	}
	return e.Conn.Call(ctx, "workspace/executeCommand", map[string]any{"command": c.Command, "arguments": args}, result)
}

// Diagnostics are the diagnostics last published for a file.
func (e *Editor) Diagnostics(rel string) []lsp.Diagnostic { return e.s.Diagnostics(e.URI(rel)) }

// Publishes counts publishDiagnostics received for a file.
func (e *Editor) Publishes(rel string) int { return e.s.Publishes(e.URI(rel)) }

// Await waits until cond (called under the session's lock after every
// message from the server, and once at once) holds, or ctx ends.
func (e *Editor) Await(ctx context.Context, what string, cond func() bool) error {
	return e.s.Await(ctx, what, cond)
}

// AwaitDiagnostics waits until the diagnostics of rel satisfy cond.
func (e *Editor) AwaitDiagnostics(ctx context.Context, rel string, what string, cond func([]lsp.Diagnostic) bool) ([]lsp.Diagnostic, error) {
	return e.s.AwaitDiagnostics(ctx, e.URI(rel), what, cond)
}

// ProgressReports returns every $/progress received so far.
func (e *Editor) ProgressReports() []Progress { return e.s.ProgressReports() }

// ProgressReportsLocked is ProgressReports for use inside an Await
// condition, which already holds the session's lock.
func (e *Editor) ProgressReportsLocked() []Progress { return e.s.ProgressReportsLocked() }

// AwaitProgressEnd waits for the end report of token and returns its message.
func (e *Editor) AwaitProgressEnd(ctx context.Context, token string) (string, error) {
	return e.s.AwaitProgressEnd(ctx, token)
}

// Notifications returns the custom notifications received with method.
func (e *Editor) Notifications(method string) []Notification { return e.s.Notifications(method) }

// NotificationsLocked is Notifications for use inside an Await condition.
func (e *Editor) NotificationsLocked(method string) []Notification {
	return e.s.NotificationsLocked(method)
}

// Shown lists the URIs the server asked the editor to show.
func (e *Editor) Shown() []string {
	var out []string
	for _, r := range e.s.Requests("window/showDocument") {
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(r.Params, &p)
		out = append(out, p.URI)
	}
	return out
}

// Messages lists window/showMessage texts received.
func (e *Editor) Messages() []string { return e.s.Messages() }

// AskedLocked lists the window/showMessageRequest texts received, for use
// inside an Await condition.
func (e *Editor) AskedLocked() []string {
	var out []string
	for _, r := range e.s.RequestsLocked("window/showMessageRequest") {
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(r.Params, &p)
		out = append(out, p.Message)
	}
	return out
}

// MessagesLocked is Messages for use inside an Await condition, which
// already holds the session's lock.
func (e *Editor) MessagesLocked() []string { return e.s.MessagesLocked() }

// CancelProgress sends window/workDoneProgress/cancel for token.
func (e *Editor) CancelProgress(ctx context.Context, token string) error {
	return e.Conn.Notify(ctx, "window/workDoneProgress/cancel", map[string]any{"token": token})
}

// answer is what the editor answers the server's requests with (the
// session records them first).
func (e *Editor) answer(method string, params json.RawMessage) (any, error) {
	switch method {
	case "window/showMessageRequest":
		if e.Answer == "" {
			return nil, nil
		}
		return map[string]any{"title": e.Answer}, nil
	case "window/showDocument":
		return map[string]any{"success": e.ShowDocument}, nil
	}
	return nil, lsp.Errorf(lsp.CodeMethodNotFound, "the fake editor does not handle %s", method)
}
