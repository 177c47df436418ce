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
type Progress struct {
	Token string
	lsp.ProgressValue
}

// Notification is one custom notification the editor received.
type Notification struct {
	Method string
	Params json.RawMessage
}

// Editor is the fake editor connected to a server.
type Editor struct {
	Dir  string
	Conn *lsp.ClientConn

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every message from the server
	diags    map[string][]lsp.Diagnostic
	pubs     map[string]int // publishDiagnostics received per URI
	progress []Progress
	created  []string
	notes    []Notification
	shown    []string
	messages []string
	asked    []string // window/showMessageRequest texts
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
	e := &Editor{Dir: dir, changed: make(chan struct{}), diags: map[string][]lsp.Diagnostic{}, pubs: map[string]int{},
		buffers: map[string]string{}, versions: map[string]int32{}, ShowDocument: true}
	e.Conn = lsp.NewClientConn(ctx, cliEnd, e)
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		_ = e.Conn.Call(sctx, "shutdown", nil, nil)
		_ = e.Conn.Notify(sctx, "exit", nil)
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
	var res json.RawMessage
	if err := e.Conn.Call(ctx, "initialize", params, &res); err != nil {
		return nil, err
	}
	return res, e.Conn.Notify(ctx, "initialized", map[string]any{})
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
func (e *Editor) Diagnostics(rel string) []lsp.Diagnostic {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.diags[e.URI(rel)]
}

// Publishes counts publishDiagnostics received for a file.
func (e *Editor) Publishes(rel string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pubs[e.URI(rel)]
}

// Await waits until cond (called under the editor's lock after every
// message from the server, and once at once) holds, or ctx ends.
func (e *Editor) Await(ctx context.Context, what string, cond func() bool) error {
	for {
		e.mu.Lock()
		ok := cond()
		ch := e.changed
		e.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// AwaitDiagnostics waits until the diagnostics of rel satisfy cond.
func (e *Editor) AwaitDiagnostics(ctx context.Context, rel string, what string, cond func([]lsp.Diagnostic) bool) ([]lsp.Diagnostic, error) {
	var got []lsp.Diagnostic
	uri := e.URI(rel)
	err := e.Await(ctx, what, func() bool {
		got = e.diags[uri]
		return cond(got)
	})
	return got, err
}

// ProgressReports returns every $/progress received so far.
func (e *Editor) ProgressReports() []Progress {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Progress(nil), e.progress...)
}

// ProgressReportsLocked is ProgressReports for use inside an Await
// condition, which already holds the editor's lock.
func (e *Editor) ProgressReportsLocked() []Progress { return e.progress }

// AwaitProgressEnd waits for the end report of token and returns its message.
func (e *Editor) AwaitProgressEnd(ctx context.Context, token string) (string, error) {
	var msg string
	err := e.Await(ctx, "the end of progress "+token, func() bool {
		for _, p := range e.progress {
			if p.Token == token && p.Kind == "end" {
				msg = p.Message
				return true
			}
		}
		return false
	})
	return msg, err
}

// Notifications returns the custom notifications received with method.
func (e *Editor) Notifications(method string) []Notification {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Notification
	for _, n := range e.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// NotificationsLocked is Notifications for use inside an Await condition.
func (e *Editor) NotificationsLocked(method string) []Notification {
	var out []Notification
	for _, n := range e.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// Shown lists the URIs the server asked the editor to show.
func (e *Editor) Shown() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.shown...)
}

// Messages lists window/showMessage texts received.
func (e *Editor) Messages() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.messages...)
}

// AskedLocked lists the window/showMessageRequest texts received, for use
// inside an Await condition.
func (e *Editor) AskedLocked() []string { return e.asked }

// MessagesLocked is Messages for use inside an Await condition, which
// already holds the editor's lock.
func (e *Editor) MessagesLocked() []string { return e.messages }

// CancelProgress sends window/workDoneProgress/cancel for token.
func (e *Editor) CancelProgress(ctx context.Context, token string) error {
	return e.Conn.Notify(ctx, "window/workDoneProgress/cancel", map[string]any{"token": token})
}

// Notification implements lsp.ClientHandler.
func (e *Editor) Notification(method string, params json.RawMessage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.signalLocked()
	switch method {
	case "textDocument/publishDiagnostics":
		var p struct {
			URI         string           `json:"uri"`
			Diagnostics []lsp.Diagnostic `json:"diagnostics"`
		}
		if json.Unmarshal(params, &p) == nil {
			e.diags[p.URI] = p.Diagnostics
			e.pubs[p.URI]++
		}
	case "$/progress":
		var p struct {
			Token json.RawMessage   `json:"token"`
			Value lsp.ProgressValue `json:"value"`
		}
		if json.Unmarshal(params, &p) == nil {
			var tok string
			if json.Unmarshal(p.Token, &tok) != nil {
				tok = string(p.Token)
			}
			e.progress = append(e.progress, Progress{Token: tok, ProgressValue: p.Value})
		}
	case "window/showMessage", "window/logMessage":
		var p struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(params, &p) == nil && method == "window/showMessage" {
			e.messages = append(e.messages, p.Message)
		}
	default:
		e.notes = append(e.notes, Notification{Method: method, Params: params})
	}
}

// Request implements lsp.ClientHandler.
func (e *Editor) Request(method string, params json.RawMessage) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.signalLocked()
	switch method {
	case "window/workDoneProgress/create":
		var p struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal(params, &p)
		e.created = append(e.created, p.Token)
		return nil, nil
	case "window/showMessageRequest":
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(params, &p)
		e.asked = append(e.asked, p.Message)
		if e.Answer == "" {
			return nil, nil
		}
		return map[string]any{"title": e.Answer}, nil
	case "window/showDocument":
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(params, &p)
		e.shown = append(e.shown, p.URI)
		return map[string]any{"success": e.ShowDocument}, nil
	}
	return nil, lsp.Errorf(lsp.CodeMethodNotFound, "the fake editor does not handle %s", method)
}

func (e *Editor) signalLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}
