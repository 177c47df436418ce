package server

import (
	"context"
	"os"
	"path/filepath"

	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// Initialize takes the workspace root from rootUri, else the first
// workspace folder, and announces what bcode-ls serves.
func (s *Server) Initialize(ctx context.Context, p *lsp.InitializeParams) (*lsp.InitializeResult, error) {
	root := p.RootURI
	if root == "" && len(p.WorkspaceFolders) > 0 {
		root = p.WorkspaceFolders[0]
	}
	if root == "" {
		return nil, lsp.Errorf(lsp.CodeInvalidParams, "bcode-ls needs a workspace: send rootUri or workspaceFolders naming a git checkout")
	}
	dir, err := lsp.URIPath(root)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, lsp.Errorf(lsp.CodeInvalidParams, "workspace %s is not a directory", dir)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	s.mu.Lock()
	s.root = dir
	s.caps = clientCaps{workDoneProgress: p.WorkDoneProgress, showDocument: p.ShowDocument, textDocumentContent: p.TextDocumentContent}
	set, serr := applySettings(s.set, p.InitializationOptions)
	if serr == nil {
		s.set = set
	} else {
		s.initErr = serr
	}
	s.mu.Unlock()
	s.log.Info("initialize", "root", dir, "client", p.ClientName, "progress", p.WorkDoneProgress, "showDocument", p.ShowDocument)
	return &lsp.InitializeResult{
		ServerName:      "bcode-ls",
		ServerVersion:   Version,
		Commands:        command.Names(),
		ContentSchemes:  []string{packScheme, mutantScheme},
		CodeActionKinds: []string{lsp.KindQuickFix, lsp.KindRefactor, lsp.KindSource},
	}, nil
}

// Initialized starts watching the workspace on disk and, unless the
// settings say otherwise, the first evidence run: diagnostics show when a
// file opens (and after a restart), not only after the first save.
func (s *Server) Initialized(ctx context.Context) {
	s.mu.Lock()
	set, initErr := s.set, s.initErr
	s.mu.Unlock()
	if initErr != nil {
		// initialize itself succeeded with the defaults: say what was wrong.
		_ = s.client.ShowMessage(context.Background(), lsp.MessageError, "bcode-ls: initializationOptions: "+initErr.Error())
	}
	if set.EvidenceOnSave {
		s.startWatchingOnce()
	}
	if set.EvidenceOnOpen {
		s.scheduleEvidence("open")
	}
}

// startWatchingOnce starts the disk watchers unless --no-watch.
func (s *Server) startWatchingOnce() {
	if s.opts.NoWatch {
		return
	}
	s.watching.Do(s.startWatching)
}
