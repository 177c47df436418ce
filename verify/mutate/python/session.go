package python

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// pyProc is the one interpreter of a run (pymutate.py's "session" mode):
// it generates the mutants, installs the schema's import hook, imports
// pytest and collects the suite once, and then forks every run off that
// collected state: the baseline, then one worker per shard of mutants.
// One interpreter start, one pytest import and one collection per run,
// where a generator, a baseline and a worker per CPU each paid their own.
//
// It writes what bcode needs while it goes on to files bcode polls for
// (gen, baseline), each written atomically, and reads bcode's commands
// from ctl (see pymutate.py's Session).
type pyProc struct {
	gen, baseline, ctl string
	cancel             context.CancelFunc
	done               chan struct{}
	expired            atomic.Bool // its budget ran out and it was stopped
	res                sandbox.Result
	err                error
}

// pySessionConfig is what the session process reads (pyConfig's session
// fields).
type pySessionConfig struct {
	pyConfig
	Request         pyGenRequest `json:"request"`
	Schema          bool         `json:"schema"`
	Baseline        bool         `json:"baseline"`
	BaselineTimeout float64      `json:"baseline_timeout"`
	GenOut          string       `json:"gen_out"`
	BaselineOut     string       `json:"baseline_out"`
	Control         string       `json:"control"`
	Wait            float64      `json:"wait"` // seconds to wait for each command
}

type pyGenRequest struct {
	Files []pyGenRequestFile `json:"files"`
}

type pyGenRequestFile struct {
	Path   string   `json:"path"`
	Source string   `json:"source"`
	Ranges [][2]int `json:"ranges"`
}

// pyShard is one worker's jobs and where it writes their results.
type pyShard struct {
	Jobs    []pyJob `json:"jobs"`
	Results string  `json:"results"`
}

// sessionWait is how long the session waits for each of bcode's commands:
// as long as the baseline may take, its retry included.
func sessionWait() time.Duration { return 3 * mutate.BaselineDeadline(0) }

// startProc starts the session; baseline says whether it runs the
// baseline (the cache does not hold it), with deadline first.
func (ps *pySession) startProc(baseline bool, first time.Duration) (*pyProc, error) {
	dir := filepath.Join(ps.tmp, "py")
	p := &pyProc{
		gen:      filepath.Join(dir, "gen.json"),
		baseline: filepath.Join(dir, "baseline.jsonl"),
		ctl:      filepath.Join(dir, "session.ctl.json"),
		done:     make(chan struct{}),
	}
	cfg := pySessionConfig{
		pyConfig: pyConfig{Mode: "session", Targets: ps.targets(false), Preferred: ps.preferred(), Isolation: ps.opts.PythonIsolation},
		Request:  ps.genRequest(), Schema: !ps.opts.Overlay,
		Baseline: baseline, BaselineTimeout: first.Seconds(),
		GenOut: p.gen, BaselineOut: p.baseline, Control: p.ctl, Wait: sessionWait().Seconds(),
	}
	cfg.Root, cfg.Paths = ps.root, ps.paths()
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("mutate: %w", err)
	}
	cfgPath := filepath.Join(dir, "session.json")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return nil, fmt.Errorf("mutate: %w", err)
	}
	ctx, cancel := context.WithCancel(ps.ctx)
	p.cancel = cancel
	go func() {
		defer close(p.done)
		defer cancel()
		// The runner's timeout only bounds a session that never gets its
		// commands: arm sets the real budget once the jobs are written.
		p.res, p.err = ps.runner.Run(ctx, sandbox.Command{
			Dir:         ps.root,
			Args:        []string{ps.py, "-I", "-B", ps.script, "run", cfgPath},
			Timeout:     3*sessionWait() + time.Hour,
			OutputLimit: 1 << 20,
		})
	}()
	return p, nil
}

// errSessionEnded is await's answer when the session ended without
// writing the file.
var errSessionEnded = errors.New("the python session ended")

// await waits for the session to write path (atomically), for at most
// limit; it returns the file's content, errSessionEnded when the session
// ended first, or context.DeadlineExceeded.
func (p *pyProc) await(path string, limit time.Duration) ([]byte, error) {
	end := time.Now().Add(limit)
	pause := time.Millisecond
	for {
		data, err := sandbox.ReadPath(path, maxResults)
		if err == nil {
			return data, nil
		}
		if _, refused := sandbox.Refused(err); refused {
			return nil, err
		}
		select {
		case <-p.done:
			// It may have written the file just before it ended.
			if data, err := sandbox.ReadPath(path, maxResults); err == nil {
				return data, nil
			}
			return nil, errSessionEnded
		case <-time.After(pause):
		}
		if time.Now().After(end) {
			return nil, context.DeadlineExceeded
		}
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// send writes a command (atomically: the session polls for the file).
func (p *pyProc) send(cmd any) error {
	data, err := json.Marshal(cmd)
	if err == nil {
		tmp := p.ctl + ".tmp"
		if err = os.WriteFile(tmp, data, 0o644); err == nil {
			err = os.Rename(tmp, p.ctl)
		}
	}
	if err != nil {
		p.cancel()
	}
	return err
}

// arm stops the session if it runs past budget.
func (p *pyProc) arm(budget time.Duration) {
	t := time.AfterFunc(budget, func() {
		p.expired.Store(true)
		p.cancel()
	})
	go func() {
		<-p.done
		t.Stop()
	}()
}

// release ends a session that gets no jobs, and waits for it.
func (p *pyProc) release() {
	if p == nil {
		return
	}
	if p.send(map[string]any{"shards": []pyShard{}}) != nil {
		p.cancel()
	}
	<-p.done
}

// stop ends the session at once and waits for it.
func (p *pyProc) stop() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}

// output is the end of what the session printed, for an error.
func (p *pyProc) output() string {
	return firstLines(string(p.res.Stdout)+string(p.res.Stderr), 12)
}

// pyBaselineHead is the first line of the session's baseline file.
type pyBaselineHead struct {
	Status string  `json:"status"` // ok, timeout, died
	Exit   int     `json:"exit"`   // 5: nothing collected
	Detail string  `json:"detail"`
	Setup  float64 `json:"setup"` // seconds from the start to the collected suite
	Wall   float64 `json:"wall"`  // seconds of the baseline run itself
}

// awaitBaseline reads the session's baseline run, asks for one more run
// with the load's retry deadline when the first timed out (as
// mutate.RunBaseline does for a process), and caches the result under key.
func (ps *pySession) awaitBaseline(p *pyProc, key string, first time.Duration) (*pyBaseline, error) {
	// The deadline of the run itself is the session's; this one also covers
	// the interpreter's start, the import and the collection before it.
	head, b, err := ps.readBaseline(p, 2*first+time.Minute)
	if err == nil && head.Status == "timeout" {
		l := sandbox.ReadLoad()
		retry := l.RetryDeadline(first, mutate.BaselineFloor, 0)
		if err = os.Remove(p.baseline); err == nil {
			err = p.send(map[string]any{"baseline": retry.Seconds()})
		}
		if err != nil {
			return nil, fmt.Errorf("mutate: python baseline: %w", err)
		}
		head, b, err = ps.readBaseline(p, retry+time.Minute)
		if err == nil && head.Status == "timeout" {
			return nil, &mutate.TimeoutError{Run: "the python baseline (the whole suite under the line tracer)", First: first, Retry: retry, Load: l}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, &mutate.TimeoutError{Run: "the python session (its start, pytest's import and the collection)", First: 2*first + time.Minute, Load: sandbox.ReadLoad()}
	}
	if errors.Is(err, errSessionEnded) {
		return nil, &mutate.BaselineError{Package: "python", Detail: fmt.Sprintf("pytest exited %d: %s", p.res.ExitCode, p.output())}
	}
	if err != nil {
		return nil, fmt.Errorf("mutate: python baseline: %w", err)
	}
	switch {
	case len(b.Tests) == 0 && head.Status != "ok":
		return nil, &mutate.BaselineError{Package: "python", Detail: head.Detail}
	case len(b.Tests) == 0 && head.Exit != 5:
		return nil, &mutate.BaselineError{Package: "python", Detail: "the baseline ran no test"}
	case head.Status != "ok":
		// As a baseline process that ended early: the tests it recorded
		// count, and the report says that the rest did not run.
		ps.rep.Notes = append(ps.rep.Notes, fmt.Sprintf("the Python baseline ended early (%s) after %d tests; tests after them cover nothing", head.Detail, len(b.Tests)))
	}
	ps.saveBaseline(key, b)
	return b, nil
}

// readBaseline waits for the baseline file and parses it: its head, then
// one record per test.
func (ps *pySession) readBaseline(p *pyProc, limit time.Duration) (pyBaselineHead, *pyBaseline, error) {
	var head pyBaselineHead
	data, err := p.await(p.baseline, limit)
	if err != nil {
		return head, nil, err
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if err := json.Unmarshal(first, &head); err != nil {
		return head, nil, fmt.Errorf("reading its head: %w", err)
	}
	b := &pyBaseline{}
	var sum float64
	for _, line := range bytes.Split(rest, []byte("\n")) {
		var t pyTest
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &t) != nil || t.NodeID == "" {
			continue
		}
		b.Tests = append(b.Tests, t)
		sum += t.Duration
	}
	// What a fresh process repeats beside the tests: the start, imports and
	// collection, and the run's own overhead.
	b.Overhead = max(time.Duration((head.Setup+head.Wall-sum)*float64(time.Second)), 0)
	return head, b, nil
}

// saveBaseline caches b under key.
func (ps *pySession) saveBaseline(key string, b *pyBaseline) {
	file := filepath.Join(ps.opts.CacheDir, "pybaseline", key+".json")
	data, err := json.Marshal(b)
	if err != nil || os.MkdirAll(filepath.Dir(file), 0o755) != nil {
		return
	}
	tmp := file + ".tmp" + strconv.Itoa(os.Getpid())
	if os.WriteFile(tmp, data, 0o644) == nil {
		_ = os.Rename(tmp, file)
	}
}
