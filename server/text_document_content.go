package server

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// URI schemes of the virtual documents bcode-ls serves.
const (
	packScheme   = "bcode-pack"
	mutantScheme = "bcode-mutant"
)

// contentStore keeps the virtual documents made for the client, the most
// recent ones only.
type contentStore struct {
	mu    sync.Mutex
	n     int
	order []string
	docs  map[string]string

	packMu sync.Mutex // one pack build at a time: the index store is not shared-safe
	// store is this connection's Go index, kept between packs.
	store app.PackIndex
}

const keepDocuments = 64

func (c *contentStore) init() { c.docs = map[string]string{} }

func (c *contentStore) put(uri, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.docs[uri]; !ok {
		c.order = append(c.order, uri)
	}
	c.docs[uri] = text
	for len(c.order) > keepDocuments {
		delete(c.docs, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *contentStore) get(uri string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.docs[uri]
	return t, ok
}

func (c *contentStore) next() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

// TextDocumentContent serves workspace/textDocumentContent (LSP 3.18) for
// bcode-pack: and bcode-mutant: URIs.
func (s *Server) TextDocumentContent(ctx context.Context, uri string) (string, error) {
	scheme, _, ok := strings.Cut(uri, ":")
	if !ok || (scheme != packScheme && scheme != mutantScheme) {
		return "", lsp.Errorf(lsp.CodeInvalidParams, "bcode-ls serves only %s: and %s: documents, not %q", packScheme, mutantScheme, uri)
	}
	text, ok := s.content.get(uri)
	if !ok {
		return "", lsp.Errorf(lsp.CodeInvalidParams, "no document %s: it was never made or is too old; run the command again", uri)
	}
	return text, nil
}

// PackPreview builds a context pack and opens it as a bcode-pack: document.
func (s *Server) PackPreview(ctx context.Context, a command.PackArgs) (command.DocumentResult, error) {
	p, err := s.buildPack(ctx, a)
	if err != nil {
		return command.DocumentResult{}, err
	}
	name := "workspace"
	if p.Selection != nil {
		name = fmt.Sprintf("%s-L%d-L%d", path.Base(p.Selection.File), p.Selection.StartLine, p.Selection.EndLine)
	}
	uri := fmt.Sprintf("%s:/%d/%s.md", packScheme, s.content.next(), name)
	text := p.Markdown()
	s.content.put(uri, text)
	return s.show(ctx, uri, text), nil
}

// buildPack builds the pack for a place through the engine (app.Pack),
// the way the task's agent gets it, reusing the server's index store so
// only changed packages are re-indexed.
func (s *Server) buildPack(ctx context.Context, a command.PackArgs) (*app.Pack, error) {
	root, err := s.workspace()
	if err != nil {
		return nil, err
	}
	if a.Budget != 0 && a.Budget < app.MinPackBudget {
		return nil, lsp.Errorf(lsp.CodeInvalidParams, "budget %d is below the minimum of %d tokens", a.Budget, app.MinPackBudget)
	}
	req := app.PackRequest{Repo: root, Goal: a.Goal, TaskID: a.TaskID, Budget: a.Budget}
	if a.URI != "" {
		sel, err := s.selection(a.URI, a.Range)
		if err != nil {
			return nil, err
		}
		req.Selection = sel
		if req.Goal == "" && a.TaskID == "" {
			req.Goal = fmt.Sprintf("Work on %s lines %d-%d", sel.File, sel.StartLine, sel.EndLine)
		}
	}
	if a.TaskID != "" {
		if _, err := s.task(ctx, a.TaskID); err != nil {
			return nil, err
		}
	}
	s.content.packMu.Lock()
	defer s.content.packMu.Unlock()
	req.Index = &s.content.store
	ip := s.indexProgress(ctx)
	defer ip.end()
	req.IndexProgress = ip.step
	p, err := s.app.Pack(ctx, req)
	if err != nil {
		return nil, lsp.Errorf(lsp.CodeRequestFailed, "building the context pack: %v", err)
	}
	return p, nil
}
