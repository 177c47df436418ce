// Package server is bcode-ls: the language server that puts bcode's
// evidence, context packs and tasks in the editor.
//
// Each LSP feature has one thin file that delegates to the engine:
// initialize.go, text_sync.go, diagnostics.go, evidence.go (runs
// verify/mutate on the branch's change), code_action.go, execute_command.go
// (the typed command contract of server/command), custom_methods.go
// (bcode/*), text_document_content.go (bcode-pack: and bcode-mutant:
// documents), progress.go and watch.go. The protocol itself lives behind
// server/lsp, the one package that imports the LSP libraries.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// Version is reported in initialize's serverInfo.
const Version = "0.1.0"

// Options configure a server.
type Options struct {
	// Debounce is how long after the last save or disk change an evidence
	// run starts; 0 means DefaultDebounce.
	Debounce time.Duration
	// Workers run mutants in parallel; 0 means the number of CPUs.
	Workers int
	// CacheDir holds mutate's baseline coverage cache ("" is its default).
	CacheDir string
	// NoWatch turns off watching the workspace on disk (files, git HEAD and
	// index); saves in the editor still trigger runs.
	NoWatch bool
	// NoEvidenceOnSave turns off runs on save and on disk changes; runs
	// then start only from bcode.evidence.run (bcode ci uses this).
	NoEvidenceOnSave bool
	// NoEvidenceOnOpen: no run when the workspace opens (the default
	// settings run one, so diagnostics show before the first save).
	NoEvidenceOnOpen bool
	// App is the engine the process opened once (bcode-ls: from the state
	// dir, --ledger and engine/agentbackend's agent); the server calls it
	// for every operation and never closes it. nil: the server opens its
	// own from AgentBackend and Ledger, and closes it when the connection
	// ends.
	App *app.Engine
	// AgentBackend builds a task's agent when App is nil; nil: tasks can
	// be created and read, not run.
	AgentBackend app.AgentBackend
	// Ledger is the user's choice of ledger when App is nil (bcode-ls
	// --ledger, $BCODE_LEDGER, ~/.config/bcode/ledger: app.ResolveLedger);
	// zero: the SQLite file in the state directory.
	Ledger app.LedgerChoice
	// Log receives the server's own log (stderr in bcode-ls).
	Log *slog.Logger
}

// by names who did a lifecycle operation from the editor, in the ledger's
// events.
const by = "bcode-ls"

// ErrExitWithoutShutdown is Serve's error when the client sent exit without
// shutdown: bcode-ls then exits with status 1, as the LSP specification asks.
var ErrExitWithoutShutdown = lsp.ErrExitWithoutShutdown

// Serve runs bcode-ls over one connection until the client exits or the
// stream ends.
func Serve(ctx context.Context, rwc io.ReadWriteCloser, opts Options) error {
	var s *Server
	err := lsp.Serve(ctx, rwc, func(c lsp.Client) lsp.Handler { s = New(c, opts); return s }, opts.Log)
	if s != nil {
		s.Close()
	}
	return err
}

// Server is one connection's server state.
type Server struct {
	opts   Options
	client lsp.Client
	log    *slog.Logger
	// closeApp closes the engine New opened itself (its ledger handle),
	// once the connection has ended; nil for one passed in.
	closeApp  func() error
	closeOnce sync.Once

	// bg is the lifetime of background work (evidence runs, tasks,
	// watchers); it ends at shutdown.
	bg     context.Context
	stopBG context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	root string // absolute workspace directory; "" before initialize
	caps clientCaps
	docs map[string]*document // open documents by URI
	// startFailed: why a task the editor started never ran, by task ID.
	startFailed map[string]string
	// tasks follows the tasks' attempts and turns and what the client was
	// told last (task_run.go).
	tasks taskTracker
	// set is the user's settings (initializationOptions, then
	// workspace/didChangeConfiguration).
	set     Settings
	initErr error // a bad initializationOptions, said after initialized
	// asked: module approvals already asked, "task module".
	asked map[string]bool
	// watching starts the disk watchers once.
	watching sync.Once

	ev       evidenceState
	repub    chan struct{} // asks the republish worker to run
	progress progressTable
	content  contentStore
	// app is the engine's operations (evidence, packs, checks, tasks),
	// shared with the CLI so the editor runs them the same way.
	app *app.Engine
}

type clientCaps struct {
	workDoneProgress, showDocument, textDocumentContent bool
}

// DefaultDebounce is how long after the last save an evidence run starts
// when Options.Debounce is 0 (and bcode-ls's --debounce default).
const DefaultDebounce = 400 * time.Millisecond

// New makes a server that talks to client.
func New(client lsp.Client, opts Options) *Server {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{opts: opts, client: client, log: opts.Log, app: opts.App, docs: map[string]*document{}, set: DefaultSettings}
	if opts.NoEvidenceOnSave {
		s.set.EvidenceOnSave, s.set.EvidenceOnOpen = false, false
	}
	if opts.NoEvidenceOnOpen {
		s.set.EvidenceOnOpen = false
	}
	if s.app == nil {
		own := app.Open(app.Options{Agent: opts.AgentBackend, Ledger: opts.Ledger, By: by})
		s.app, s.closeApp = own, own.Close
	}
	s.bg, s.stopBG = context.WithCancel(context.Background())
	s.ev.init()
	s.progress.init()
	s.content.init()
	s.repub = make(chan struct{}, 1)
	s.goBackground("republishing diagnostics", s.republishWorker)
	return s
}

// requestRepublish asks for diagnostics to be re-placed on the current
// texts. It never blocks: text-sync handlers call it on the connection's
// read loop, which must never wait on a write to the client.
func (s *Server) requestRepublish() {
	select {
	case s.repub <- struct{}{}:
	default: // one is already pending and will see this change too
	}
}

func (s *Server) republishWorker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.repub:
			s.republish(ctx)
		}
	}
}

// Root is the workspace directory, or an error a client can act on.
func (s *Server) workspace() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == "" {
		return "", lsp.Errorf(lsp.CodeNotInitialized, "bcode-ls has no workspace: initialize with a rootUri or workspaceFolders naming a git checkout")
	}
	return s.root, nil
}

// fileOf resolves a file: URI to its workspace-relative slash path, or an
// InvalidParams error when it is malformed or outside the workspace.
func (s *Server) fileOf(uri string) (abs, rel string, err error) {
	root, err := s.workspace()
	if err != nil {
		return "", "", err
	}
	if uri == "" {
		return "", "", lsp.Errorf(lsp.CodeInvalidParams, "no document URI given")
	}
	p, err := lsp.URIPath(uri)
	if err != nil {
		return "", "", err
	}
	p = filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	r, err := filepath.Rel(root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", "", lsp.Errorf(lsp.CodeInvalidParams, "%s is outside the workspace %s: bcode-ls only works on files of the workspace it was started for", p, root)
	}
	return p, filepath.ToSlash(r), nil
}

// text is the current text of a workspace file: the editor's copy when it
// is open, else the disk's.
func (s *Server) text(abs string) (string, error) {
	uri := lsp.FileURI(abs)
	s.mu.Lock()
	d := s.docs[uri]
	s.mu.Unlock()
	if d != nil {
		return d.text(), nil
	}
	b, err := s.readFile(abs)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// maxReadBytes caps a read of a file the editor does not have open (for a
// code action, a task's selection or a context pack's): the workspace may
// be an agent's, and a 2 GB file must not become 2 GB of the server.
const maxReadBytes = 4 << 20

// errTooBig is returned for a file over maxReadBytes.
var errTooBig = errors.New("file too large")

// readFile reads a workspace file that is not open in the editor: confined
// to the workspace (no symbolic link is followed out of it, nor a final
// one at all) and refused, before any byte is read, when it is larger than
// maxReadBytes.
func (s *Server) readFile(abs string) ([]byte, error) {
	root, err := s.workspace()
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("%s is outside the workspace %s", abs, root)
	}
	rel = filepath.ToSlash(rel)
	b, err := app.ReadConfined(root, rel, maxReadBytes)
	var big *app.TooLargeError
	switch {
	case !errors.As(err, &big):
		return b, err
	case big.Grew:
		return nil, fmt.Errorf("%w: %s grew past bcode-ls's %d MiB limit while it was read", errTooBig, rel, maxReadBytes>>20)
	default:
		return nil, fmt.Errorf("%w: %s is %d MiB, over bcode-ls's %d MiB limit for a file the editor has not opened: open it in the editor, or work on a smaller file", errTooBig, rel, big.Size>>20, maxReadBytes>>20)
	}
}

// go runs f in the background, tied to the server's lifetime, recovering a
// panic so one bad run never takes the server down.
func (s *Server) goBackground(name string, f func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("panic in background work", "work", name, "panic", fmt.Sprint(p))
				_ = s.client.ShowMessage(context.Background(), lsp.MessageError, fmt.Sprintf("bcode-ls: %s failed with an internal error: %v", name, p))
			}
		}()
		f(s.bg)
	}()
}

// Shutdown stops background work and waits for it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopBG()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		s.log.Warn("shutdown: background work did not stop within 10s")
	}
	return nil
}

// Close ends the connection's server: it stops background work, waits for
// it (10s at most) and closes what New opened, so a long-lived process
// serving many connections (--listen) holds no ledger handle per
// connection that has ended.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.Shutdown(context.Background())
		if s.closeApp != nil {
			err = s.closeApp()
		}
	})
	return err
}

// Exit is the client's last word.
func (s *Server) Exit(context.Context) { s.stopBG() }

// ExecuteCommand dispatches through the command contract.
func (s *Server) ExecuteCommand(ctx context.Context, name string, args []json.RawMessage) (any, error) {
	return command.Dispatch(ctx, s, name, args)
}
