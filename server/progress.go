package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bcode-dev/bcode/server/lsp"
)

// progressTable maps live progress tokens to the cancel of their work, so
// window/workDoneProgress/cancel stops exactly that work.
type progressTable struct {
	mu     sync.Mutex
	next   atomic.Int64
	cancel map[lsp.ProgressToken]context.CancelFunc
}

func (t *progressTable) init() { t.cancel = map[lsp.ProgressToken]context.CancelFunc{} }

// progress is one $/progress stream. It also is a verify.Progress, so the
// engine's steps show up as reports. Always end it: callers write
// `p := s.beginProgress(...); defer p.end(...)`, and end is idempotent.
type progress struct {
	s       *Server
	token   lsp.ProgressToken
	enabled bool
	ended   atomic.Bool
}

// beginProgress creates a token and sends begin. cancel, when not nil, is
// called if the user cancels the progress in the editor.
func (s *Server) beginProgress(ctx context.Context, title string, cancel context.CancelFunc) *progress {
	tok := lsp.ProgressToken(fmt.Sprintf("bcode-%d", s.progress.next.Add(1)))
	p := &progress{s: s, token: tok}
	s.mu.Lock()
	enabled := s.caps.workDoneProgress
	s.mu.Unlock()
	if cancel != nil {
		s.progress.mu.Lock()
		s.progress.cancel[tok] = cancel
		s.progress.mu.Unlock()
	}
	if !enabled {
		return p
	}
	if err := s.client.CreateProgress(ctx, tok); err != nil {
		s.log.Warn("client refused a progress token", "err", err)
		return p
	}
	p.enabled = true
	_ = s.client.Progress(ctx, tok, lsp.ProgressValue{Kind: "begin", Title: title, Cancellable: cancel != nil})
	return p
}

// Step reports one step of the work.
func (p *progress) Step(format string, args ...any) {
	if !p.enabled || p.ended.Load() {
		return
	}
	msg := fmt.Sprintf(format, args...)
	p.s.log.Debug("progress", "token", p.token, "msg", msg)
	_ = p.s.client.Progress(context.Background(), p.token, lsp.ProgressValue{Kind: "report", Message: msg})
}

// end sends the end report (once) and forgets the token's cancel.
func (p *progress) end(msg string) {
	if !p.ended.CompareAndSwap(false, true) {
		return
	}
	p.s.progress.mu.Lock()
	delete(p.s.progress.cancel, p.token)
	p.s.progress.mu.Unlock()
	if p.enabled {
		_ = p.s.client.Progress(context.Background(), p.token, lsp.ProgressValue{Kind: "end", Message: msg})
	}
}

// WorkDoneProgressCancel cancels the work behind token.
func (s *Server) WorkDoneProgressCancel(ctx context.Context, token lsp.ProgressToken) {
	s.progress.mu.Lock()
	cancel := s.progress.cancel[token]
	s.progress.mu.Unlock()
	if cancel == nil {
		s.log.Info("cancel for a progress that is not running", "token", token)
		return
	}
	s.log.Info("progress cancelled by the client", "token", token)
	cancel()
}

// packIndexProgress reports a pack's Go indexing as one $/progress
// stream, begun at the first package indexed (a warm index indexes none
// and shows nothing) and ended by end, which the pack defers: so it ends
// however the pack does.
type packIndexProgress struct {
	s    *Server
	ctx  context.Context
	p    *progress
	done int
	last time.Time
}

func (s *Server) indexProgress(ctx context.Context) *packIndexProgress {
	return &packIndexProgress{s: s, ctx: ctx}
}

// step is pack.Input.IndexProgress: at most one report per 100ms, and the
// last package's always.
func (ip *packIndexProgress) step(done, total int, dir string) {
	if ip.p == nil {
		ip.p = ip.s.beginProgress(ip.ctx, "bcode index", nil)
	}
	ip.done = done
	if done < total && time.Since(ip.last) < 100*time.Millisecond {
		return
	}
	ip.last = time.Now()
	ip.p.Step("indexed %d of %d packages (%s)", done, total, dir)
}

func (ip *packIndexProgress) end() {
	if ip.p != nil {
		ip.p.end(fmt.Sprintf("indexed %d packages", ip.done))
	}
}
