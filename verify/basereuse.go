package verify

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// BaseResults stores the untouched base's whole-suite run (its tests'
// results, units and measured duration) under the key of everything that
// decides it (basekey.go), so a later check of another change on the same
// base, by any attempt, task or runner sharing the store, reads it instead
// of running the base again. Only the untouched base is stored: every
// other run holds the change's files. The ledger implements it (engine/check
// adapts it); Gate.BaseResults nil is no reuse.
type BaseResults interface {
	// Get is the value under key and when it was stored; ok false when
	// there is none. An error is a miss too: the base runs.
	Get(ctx context.Context, key string) (data []byte, stored time.Time, ok bool, err error)
	Put(ctx context.Context, key string, data []byte) error
}

// BaseReuse names, in a report, the stored run of the base the gate read
// instead of running the base's suite.
type BaseReuse struct {
	Key      string    `json:"key"` // its first 12 hex digits
	StoredAt time.Time `json:"stored_at"`
}

// storedBase is the stored form of a base's run. Key is the whole key, so
// a value read under another is refused; the snapshot's directory is
// dirMark in the details, put back as the snapshot of the run reading it.
type storedBase struct {
	Version    string                `json:"version"`
	Key        string                `json:"key"`
	Results    []TestResult          `json:"results"`
	Units      map[string]UnitResult `json:"units"`
	DurationNS int64                 `json:"duration_ns"`
	// Repeats are the fail-to-pass candidates' repeat rounds on the
	// snapshot, as they ran (a run of the base with the head's tests,
	// beforereuse.go); the untouched base has none.
	Repeats []TestResult `json:"repeats,omitempty"`
}

const dirMark = "\x00base\x00"

// errBadStored: a stored value that does not decode, or not to a run of
// this key; it is ignored and the base runs again.
var errBadStored = errors.New("base results: undecodable")

// encodeBase is s in its stored form, gzipped.
func encodeBase(key string, s *sideRun) ([]byte, error) {
	return encodeRun(baseKeyVersion, key, s, nil)
}

// encodeRun is s and its repeat rounds in the stored form of version,
// gzipped.
func encodeRun(version, key string, s *sideRun, repeats []TestResult) ([]byte, error) {
	sb := storedBase{Version: version, Key: key, Units: map[string]UnitResult{}, DurationNS: int64(s.duration)}
	for _, r := range repeats {
		r.Detail = strings.ReplaceAll(r.Detail, s.dir, dirMark)
		sb.Repeats = append(sb.Repeats, r)
	}
	for _, id := range s.order {
		r := s.results[id]
		r.Detail = strings.ReplaceAll(r.Detail, s.dir, dirMark)
		sb.Results = append(sb.Results, r)
	}
	for k, u := range s.units {
		u.Detail = strings.ReplaceAll(u.Detail, s.dir, dirMark)
		sb.Units[k] = u
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(sb); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeBase reads a stored run of key back as the base's run in dir. A
// value that is not gzipped JSON of this version and key, or whose
// results name no language or outcome, is errBadStored.
func decodeBase(key, dir string, data []byte) (*sideRun, error) {
	s, repeats, err := decodeRun(baseKeyVersion, key, dir, data)
	if err == nil && len(repeats) > 0 {
		return nil, fmt.Errorf("%w: repeats stored with the untouched base", errBadStored)
	}
	return s, err
}

// decodeRun reads a stored run of version and key back as a run in dir,
// with its repeat rounds.
func decodeRun(version, key, dir string, data []byte) (*sideRun, []TestResult, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errBadStored, err)
	}
	var sb storedBase
	dec := json.NewDecoder(io.LimitReader(zr, 256<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sb); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errBadStored, err)
	}
	if sb.Version != version || sb.Key != key || sb.DurationNS < 0 {
		return nil, nil, fmt.Errorf("%w: another version or key", errBadStored)
	}
	s := newSideRun(dir)
	s.ran, s.duration = true, time.Duration(sb.DurationNS)
	for _, r := range sb.Results {
		if r.Test.Language == "" || r.Outcome == "" {
			return nil, nil, fmt.Errorf("%w: a result without language or outcome", errBadStored)
		}
		r.Detail = strings.ReplaceAll(r.Detail, dirMark, dir)
		s.add(r.Test.Language, SuiteResult{Results: []TestResult{r}})
	}
	for k, u := range sb.Units {
		lang, unit, ok := strings.Cut(k, ":")
		if !ok || unit != u.Unit || lang == "" || u.Outcome == "" {
			return nil, nil, fmt.Errorf("%w: unit %q", errBadStored, k)
		}
		u.Detail = strings.ReplaceAll(u.Detail, dirMark, dir)
		s.units[k] = u
	}
	repeats := make([]TestResult, 0, len(sb.Repeats))
	for _, r := range sb.Repeats {
		if r.Test.Language == "" || r.Outcome == "" {
			return nil, nil, fmt.Errorf("%w: a repeat without language or outcome", errBadStored)
		}
		r.Detail = strings.ReplaceAll(r.Detail, dirMark, dir)
		repeats = append(repeats, r)
	}
	return s, repeats, nil
}

// storable reports whether a base's run may be stored: it ran whole, once
// (no retry), with no timeout, environment error or refused report, so
// nothing in it depends on the machine's state at the time.
func storable(s *sideRun, retried bool) bool {
	return s != nil && s.ran && !retried && !s.timedOut() && len(s.env) == 0 && len(s.refused) == 0
}

// startBaseKey starts keying the base beside the head's snapshot and
// candidates: only a whole-suite run of the untouched base is reused.
func (r *checkRun) startBaseKey() {
	if r.g.BaseResults == nil || r.cfg.Gate.SkipFullSuite {
		return
	}
	r.baseKeyDone = make(chan struct{})
	go func() {
		defer close(r.baseKeyDone)
		defer r.timing("base_key", time.Now())
		r.baseKey, r.baseKeyErr = r.g.baseKey(r.ctx, r.change, r.baseDir, r.cfg)
	}()
}

// reuseBase reads the base's stored run, if there is one for its key, and
// reports whether it did; a missing key, a miss, a store error or an
// undecodable value all leave the base to run. It runs in the base's run
// slot, beside the other runs: nothing else writes the report's notes or
// the base's run then.
func (r *checkRun) reuseBase() bool {
	if r.baseKeyDone == nil {
		return false
	}
	t0 := time.Now()
	<-r.baseKeyDone
	r.timing("base_key_wait", t0)
	if r.baseKeyErr != nil {
		// Said beside the verdict: a user who expects the reuse learns
		// why the base ran.
		note := fmt.Sprintf("the base's suite ran and was not kept: %v", r.baseKeyErr)
		r.p.Step("%s", note)
		r.rep.Notes = append(r.rep.Notes, note)
		return false
	}
	data, at, ok, err := r.g.BaseResults.Get(r.ctx, r.baseKey)
	if err != nil || !ok {
		return false
	}
	s, err := decodeBase(r.baseKey, r.baseDir, data)
	if err != nil {
		r.p.Step("ignoring the stored base results: %v", err)
		return false
	}
	r.base = s
	r.rep.BaseReused = &BaseReuse{Key: r.baseKey[:12], StoredAt: at.UTC()}
	r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("base results reused from %s, key %s: the base's suite did not run again (bcode check --no-cache runs it)",
		at.UTC().Format(time.RFC3339), r.baseKey[:12]))
	return true
}

// keepBase stores the base's run when it ran here and may be stored. A
// store that refuses it changes nothing of this check.
func (r *checkRun) keepBase() {
	if r.baseKey == "" || r.baseKeyErr != nil || r.rep.BaseReused != nil || !storable(r.base, r.retried["base"]) {
		return
	}
	data, err := encodeBase(r.baseKey, r.base)
	if err == nil {
		err = r.g.BaseResults.Put(r.ctx, r.baseKey, data)
	}
	if err != nil {
		r.p.Step("not storing the base's results: %v", err)
	}
}
