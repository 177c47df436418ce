package attest

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/verify"
)

// Record is what the ledger holds about a task that a predicate is made
// from.
type Record struct {
	Task     engine.Task
	Attempts []engine.Attempt
	Events   []engine.Event
	// Runs are the task's gate runs, any order; the newest one of Head is
	// the one attested.
	Runs []engine.VerificationRun
	Head string // the task branch's commit
}

// reportExtra are the check report's fields this package reads by name,
// whatever version of verify.Report wrote the run: the level and the
// oracle are absent from older reports and then stay empty.
type reportExtra struct {
	Level         string            `json:"level"`
	LevelRequired string            `json:"level_required"`
	Oracle        []string          `json:"oracle"`
	Toolchains    map[string]string `json:"toolchains"`
}

// NewPredicate is the predicate of rec: the newest recorded check of its
// head (verdict Unchecked when there is none), the task and its attempts,
// and its approval when it was accepted.
func NewPredicate(rec Record) (*Predicate, error) {
	p := &Predicate{
		Task:    TaskInfo{ID: rec.Task.ID, Status: string(rec.Task.Status), Attempts: len(rec.Attempts)},
		Base:    rec.Task.Base,
		Head:    rec.Head,
		Verdict: Unchecked,
		Reasons: []Reason{}, Oracle: []string{}, Credited: []string{}, Findings: []Finding{},
		Bcode: ThisBuild(),
	}
	if run := newestRunOf(rec.Runs, rec.Head); run != nil {
		if err := p.addRun(run); err != nil {
			return nil, err
		}
	}
	p.Approval = approvalOf(rec.Events)
	return p, p.Validate()
}

// newestRunOf is the newest run that judged head, or nil.
func newestRunOf(runs []engine.VerificationRun, head string) *engine.VerificationRun {
	var best *engine.VerificationRun
	for i := range runs {
		r := &runs[i]
		if r.Head == head && (best == nil || r.At.After(best.At) || r.At.Equal(best.At) && r.ID > best.ID) {
			best = r
		}
	}
	return best
}

// addRun fills the verdict and what it rests on from one gate run.
func (p *Predicate) addRun(run *engine.VerificationRun) error {
	var rep verify.Report
	var extra reportExtra
	if err := json.Unmarshal(run.Report, &rep); err != nil {
		return fmt.Errorf("attest: the check report of run %d: %w", run.ID, err)
	}
	if err := json.Unmarshal(run.Report, &extra); err != nil {
		return fmt.Errorf("attest: the check report of run %d: %w", run.ID, err)
	}
	at := run.At.UTC()
	p.Verdict, p.CheckedAt, p.Runner = run.Verdict, &at, rep.Runner
	p.Level, p.LevelRequired = extra.Level, extra.LevelRequired
	if len(extra.Toolchains) > 0 {
		p.Toolchains, p.ToolchainsSource = extra.Toolchains, ToolchainsFromCheck
	}
	if extra.Oracle != nil {
		p.Oracle = extra.Oracle
	}
	for _, r := range rep.Reasons {
		p.Reasons = append(p.Reasons, Reason{Code: r.Code, Message: r.Message})
	}
	for _, t := range rep.Credited() {
		p.Credited = append(p.Credited, verify.Test{Language: t.Language, Package: t.Package, Name: t.Name}.ID())
	}
	for _, group := range [][]verify.Finding{rep.Tamper, rep.ChangedExpectations, rep.Unsupported} {
		for _, f := range group {
			p.Findings = append(p.Findings, Finding{Code: f.Code, Path: f.Path, Line: f.Line, Message: f.Message})
		}
	}
	if pp := rep.PassToPass; pp != nil {
		p.PassToPass = &PassToPass{Checked: pp.Checked, Failed: len(pp.Failed), Vanished: len(pp.Vanished), PreExisting: len(pp.PreExisting)}
	}
	return nil
}

// approvalOf is the task's acceptance, from its last task.accepted event.
func approvalOf(events []engine.Event) *Approval {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.Kind != engine.EventAccepted {
			continue
		}
		var d struct {
			By     string `json:"by"`
			Force  bool   `json:"force"`
			Method string `json:"method"`
			Digest string `json:"digest"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || d.By == "" {
			return nil
		}
		return &Approval{By: d.By, At: ev.At.UTC(), Forced: d.Force, Method: d.Method, Digest: d.Digest}
	}
	return nil
}

// ThisBuild is the running bcode's version (its module version, "(devel)"
// for a build from a checkout) and the Go release it was built with.
func ThisBuild() Build {
	b := Build{Version: "(devel)", Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	return b
}
