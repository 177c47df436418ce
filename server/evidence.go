package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify"
)

// EvidenceReport is the last evidence run, as bcode/evidence returns it.
type EvidenceReport struct {
	Run int `json:"run"`
	// State is "none" (no run yet), "running", "done", "failed" or
	// "cancelled".
	State    string             `json:"state"`
	Reason   string             `json:"reason,omitempty"` // what started it: save, disk, command
	Base     string             `json:"base,omitempty"`
	Head     string             `json:"head,omitempty"`
	Started  time.Time          `json:"started,omitzero"`
	Finished time.Time          `json:"finished,omitzero"`
	Error    string             `json:"error,omitempty"`
	Mutants  []verify.Mutant    `json:"mutants"`
	Stats    *app.EvidenceStats `json:"stats,omitempty"`
	Errors   []string           `json:"errors,omitempty"`
	Notes    []string           `json:"notes,omitempty"`
	// TestFiles maps "dir:TestName" to the test file declaring it, so
	// `bcode ci` renders the same mutation report as `bcode evidence`.
	TestFiles map[string]string `json:"testFiles,omitempty"`

	sources map[string]string // head content of files with mutants
}

// evidenceState is the evidence runs of one server: at most one runs; a
// newer request cancels it.
type evidenceState struct {
	mu      sync.Mutex
	timer   *time.Timer // debounce of saves and disk changes
	reason  string
	cancel  context.CancelFunc
	run     int
	running bool
	base    string         // the base asked for by the last bcode.evidence.run
	idle    chan struct{}  // closed whenever no run is pending or running
	last    EvidenceReport // the last finished (or failed) run
	pub     publishedSet
}

func (e *evidenceState) init() {
	e.idle = make(chan struct{})
	close(e.idle)
	e.last = EvidenceReport{State: "none"}
	e.pub.hash = map[string]string{}
}

// busyLocked marks the state busy (a run pending or running).
func (e *evidenceState) busyLocked() {
	select {
	case <-e.idle:
		e.idle = make(chan struct{})
	default:
	}
}

// settleLocked marks the state idle when nothing is pending or running.
func (e *evidenceState) settleLocked() {
	if e.timer == nil && !e.running {
		select {
		case <-e.idle:
		default:
			close(e.idle)
		}
	}
}

// scheduleEvidence starts a run once saves and disk changes have been quiet
// for the debounce time.
func (s *Server) scheduleEvidence(reason string) {
	e := &s.ev
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.bg.Err() != nil {
		return
	}
	e.reason = reason
	e.busyLocked()
	if e.timer != nil {
		e.timer.Reset(s.opts.Debounce)
		return
	}
	e.timer = time.AfterFunc(s.opts.Debounce, func() {
		e.mu.Lock()
		e.timer = nil
		r := e.reason
		e.mu.Unlock()
		s.startEvidence(r, "")
	})
}

// startEvidence cancels a run under way and starts a new one at once. base
// "" keeps the base of the last explicit run (or the default base).
func (s *Server) startEvidence(reason, base string) (int, lsp.ProgressToken) {
	e := &s.ev
	e.mu.Lock()
	if e.cancel != nil {
		e.cancel() // a newer request supersedes the older run
	}
	if base != "" {
		e.base = base
	}
	base = e.base
	e.run++
	run := e.run
	ctx, cancel := context.WithCancel(s.bg)
	e.cancel = cancel
	e.running = true
	e.busyLocked()
	e.mu.Unlock()

	tokens := make(chan lsp.ProgressToken, 1)
	s.goBackground("evidence run", func(context.Context) {
		defer cancel()
		s.runEvidence(ctx, cancel, run, reason, base, tokens)
	})
	select {
	case tok := <-tokens:
		return run, tok
	case <-time.After(5 * time.Second):
		return run, ""
	}
}

// runEvidence is one run: load the change against the base, run mutants on
// a snapshot of the head, publish what survived.
func (s *Server) runEvidence(ctx context.Context, cancel context.CancelFunc, run int, reason, base string, tokens chan<- lsp.ProgressToken) {
	p := s.beginProgress(ctx, "bcode evidence", cancel)
	tokens <- p.token
	rep := EvidenceReport{Run: run, State: "running", Reason: reason, Started: time.Now()}
	s.ev.mu.Lock()
	if s.ev.run == run {
		prev := s.ev.last
		s.ev.last = rep
		// Keep showing the previous mutants while the new run works.
		s.ev.last.Mutants, s.ev.last.sources = prev.Mutants, prev.sources
	}
	s.ev.mu.Unlock()

	endMsg := "failed"
	defer func() { p.end(endMsg) }()
	err := s.evidence(ctx, &rep, base, p)
	rep.Finished = time.Now()
	switch {
	case err != nil && ctx.Err() != nil:
		rep.State, rep.Error = "cancelled", "cancelled: a newer save or the user stopped this run"
		endMsg = "cancelled"
	case err != nil:
		rep.State, rep.Error = "failed", err.Error()
		s.log.Warn("evidence run failed", "run", run, "err", err)
		if reason != "command" {
			_ = s.client.ShowMessage(context.Background(), lsp.MessageWarning, "bcode evidence: "+err.Error())
		}
	default:
		rep.State = "done"
		endMsg = summary(&rep)
	}

	s.ev.mu.Lock()
	latest := s.ev.run == run
	if latest {
		if rep.State == "cancelled" || rep.State == "failed" {
			// Keep the previous diagnostics: a failed run proves nothing.
			prev := s.ev.last
			rep.Mutants, rep.sources = prev.Mutants, prev.sources
		}
		s.ev.last = rep
		s.ev.running = false
		s.ev.cancel = nil
	}
	s.ev.mu.Unlock()
	if latest {
		s.republish(context.Background())
	}
	// End the progress before anyone waiting on the run is released, so a
	// client sees diagnostics, then the end, then its answer.
	p.end(endMsg)
	if latest {
		s.ev.mu.Lock()
		s.ev.settleLocked()
		s.ev.mu.Unlock()
	}
}

// evidence runs the engine's evidence on the workspace, as `bcode
// evidence` does, and fills rep with its result.
func (s *Server) evidence(ctx context.Context, rep *EvidenceReport, base string, p verify.Progress) error {
	root, err := s.workspace()
	if err != nil {
		return err
	}
	req := app.EvidenceRequest{Repo: root, Base: base, LastCommit: true, Options: app.EvidenceOptions{Workers: s.opts.Workers, CacheDir: s.opts.CacheDir}}
	res, err := s.app.Evidence(ctx, req, p)
	if res != nil {
		rep.Base, rep.Head = res.Base, res.Head
	}
	switch {
	case errors.Is(err, app.ErrRedBaseline):
		return fmt.Errorf("%v: the code must pass its own tests before mutants can be judged", err)
	case err != nil:
		return err
	}
	mr := res.Report
	rep.Mutants = mr.Mutants
	if rep.Mutants == nil {
		rep.Mutants = []verify.Mutant{}
	}
	rep.Stats = &mr.Stats
	rep.Errors, rep.Notes = mr.Errors, append(append(rep.Notes, res.Notes...), mr.Notes...)
	rep.sources = mr.Sources
	rep.TestFiles = mr.TestFiles
	return nil
}

func summary(rep *EvidenceReport) string {
	var surv, other int
	for _, m := range rep.Mutants {
		switch m.Verdict.Attention() {
		case verify.MutantWarning:
			surv++
		case verify.MutantNotice:
			other++
		}
	}
	switch {
	case len(rep.Mutants) == 0 && len(rep.Notes) > 0:
		return rep.Notes[len(rep.Notes)-1]
	case len(rep.Mutants) == 0:
		return "no mutants on the changed lines"
	case surv == 0 && other == 0:
		return fmt.Sprintf("all %d mutants killed", len(rep.Mutants))
	default:
		return fmt.Sprintf("%d of %d mutants survive, %d not covered, timed out or without a verdict", surv, len(rep.Mutants), other)
	}
}

// EvidenceRun is the bcode.evidence.run command: start now, reply at once.
func (s *Server) EvidenceRun(ctx context.Context, a command.EvidenceRunArgs) (command.EvidenceRunResult, error) {
	if _, err := s.workspace(); err != nil {
		return command.EvidenceRunResult{}, err
	}
	if err := s.checkGit(ctx); err != nil {
		return command.EvidenceRunResult{}, err
	}
	if a.Base != "" {
		root, _ := s.workspace()
		if _, err := app.ResolveRevision(ctx, root, a.Base); err != nil {
			return command.EvidenceRunResult{}, lsp.Errorf(lsp.CodeInvalidParams, "base %q is not a revision of this repository: %v", a.Base, err)
		}
	}
	s.ev.mu.Lock()
	if s.ev.timer != nil {
		s.ev.timer.Stop()
		s.ev.timer = nil
	}
	s.ev.mu.Unlock()
	run, tok := s.startEvidence("command", a.Base)
	return command.EvidenceRunResult{Run: run, Token: string(tok)}, nil
}

// checkGit reports a non-git workspace as a request error.
func (s *Server) checkGit(ctx context.Context) error {
	root, err := s.workspace()
	if err != nil {
		return err
	}
	if _, err := app.CheckoutRoot(ctx, root); err != nil {
		return lsp.Errorf(lsp.CodeRequestFailed, "workspace %s is not a git checkout: %v", root, err)
	}
	return nil
}

// lastEvidence returns the last report, waiting for a pending or running
// run first when wait is set.
func (s *Server) lastEvidence(ctx context.Context, wait bool) (EvidenceReport, error) {
	for {
		s.ev.mu.Lock()
		idle := s.ev.idle
		rep := s.ev.last
		s.ev.mu.Unlock()
		if !wait {
			return rep, nil
		}
		select {
		case <-idle:
			s.ev.mu.Lock()
			still := s.ev.idle == idle
			rep = s.ev.last
			s.ev.mu.Unlock()
			if still {
				return rep, nil
			}
		case <-ctx.Done():
			return rep, lsp.Errorf(lsp.CodeRequestCancelled, "bcode/evidence: cancelled while waiting for the run")
		}
	}
}
