package server

import (
	"context"
	"sync"

	"github.com/bcode-dev/bcode/server/lsp"
)

// document is an open editor buffer. The text-sync notifications arrive in
// order on the connection's read loop (see lsp.Handler), so each is applied
// exactly in the order the client sent it.
type document struct {
	mu      sync.Mutex
	version int32
	body    string
}

func (d *document) text() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.body
}

// DidOpen records the buffer and re-places existing diagnostics on it.
func (s *Server) DidOpen(ctx context.Context, item lsp.TextDocumentItem) {
	s.mu.Lock()
	s.docs[item.URI] = &document{version: item.Version, body: item.Text}
	s.mu.Unlock()
	s.requestRepublish()
}

// DidChange applies the edits; diagnostics whose line went away are
// cleared at once, without waiting for a run.
func (s *Server) DidChange(ctx context.Context, uri string, version int32, changes []lsp.ContentChange) {
	s.mu.Lock()
	d := s.docs[uri]
	s.mu.Unlock()
	if d == nil {
		s.log.Warn("didChange for a document that is not open", "uri", uri)
		return
	}
	d.mu.Lock()
	for _, c := range changes {
		d.body = applyChange(d.body, c)
	}
	d.version = version
	d.mu.Unlock()
	s.requestRepublish()
}

// DidSave schedules an evidence run (debounced: a burst of saves makes one
// run, and a newer save cancels a run under way).
func (s *Server) DidSave(ctx context.Context, uri string) {
	if !s.settings().EvidenceOnSave {
		return
	}
	if _, _, err := s.fileOf(uri); err != nil {
		s.log.Info("save outside the workspace ignored", "uri", uri)
		return
	}
	s.scheduleEvidence("save")
}

// DidClose forgets the buffer; diagnostics are re-placed on the disk text.
func (s *Server) DidClose(ctx context.Context, uri string) {
	s.mu.Lock()
	delete(s.docs, uri)
	s.mu.Unlock()
	s.requestRepublish()
}

// DidChangeWatchedFiles is the client's own file watcher: treated like a
// change seen on disk.
func (s *Server) DidChangeWatchedFiles(ctx context.Context, uris []string) {
	if !s.settings().EvidenceOnSave {
		return
	}
	s.scheduleEvidence("files changed")
}
