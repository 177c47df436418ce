package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The base with the head's tests ("before") is the base's code with the
// change's test files and test support laid over it. Two attempts whose
// test files are the same lay out the same snapshot byte for byte, so its
// run of the candidate units, and the repeat rounds of its fail-to-pass
// candidates, give what they gave before: they are stored in BaseResults
// under a key of everything that decides them, and a later attempt with the
// same tests runs only the head's side. The key is made here and nowhere
// else:
//
//	base     the untouched base's key (basekey.go): this executable, the
//	         base's tree, the sandbox, its environment, every adapter's
//	         toolchain, the config
//	overlay  every file laid over the base: path, mode and content (or
//	         its deletion)
//	units    the candidate units the run is asked for
//
// The toolchains in the base's key were probed in the base's snapshot; an
// overlay file that decides a toolchain (a Python .venv or
// .python-version) would make the snapshot's toolchain another, so such an
// overlay, or a language whose adapter cannot tell which files decide its
// toolchain (ToolchainFiles), leaves the snapshot unkeyed: it runs.

// beforeKeyVersion changes when what the key covers or the stored form
// does.
const beforeKeyVersion = "bcode-before-results-1"

// ToolchainFiles is implemented by an adapter that can tell which files of
// a snapshot decide the toolchain its runs use, so a snapshot laid over
// with other files keeps the toolchain probed without them.
type ToolchainFiles interface {
	DecidesToolchain(path string) bool
}

// beforeKeyable reports whether the before snapshot can be keyed at all,
// before the base's key is made: it is laid out, and every language it
// runs can tell that no file laid over the base decides its toolchain.
func (r *checkRun) beforeKeyable() error {
	if r.g.BaseResults == nil || r.baseKeyDone == nil || r.beforeDir == "" {
		return fmt.Errorf("%w: no store, or no snapshot of the base with the head's tests", ErrUnkeyed)
	}
	for lang := range r.units {
		tf, ok := r.g.adapter(lang).(ToolchainFiles)
		if !ok {
			return fmt.Errorf("%w: the %s adapter does not name the files that decide its toolchain", ErrUnkeyed, lang)
		}
		for _, f := range r.overBase {
			if tf.DecidesToolchain(f.Path) {
				return fmt.Errorf("%w: the head's %s decides the %s toolchain", ErrUnkeyed, f.Path, lang)
			}
		}
	}
	return nil
}

// beforeKey is the key of the before snapshot's run of the candidate
// units, made once the base's key is.
func (r *checkRun) beforeKey() (string, error) {
	if err := r.beforeKeyable(); err != nil {
		return "", err
	}
	if r.baseKey == "" || r.baseKeyErr != nil {
		return "", fmt.Errorf("%w: the base is not keyed", ErrUnkeyed)
	}
	h := sha256.New()
	part := func(name, value string) { fmt.Fprintf(h, "%s %d\n%s\n", name, len(value), value) }
	part("version", beforeKeyVersion)
	part("base", r.baseKey)
	files := slices.Clone(r.overBase)
	slices.SortFunc(files, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range files {
		if isSubmodule(f) {
			return "", fmt.Errorf("%w: submodule %s in the overlay", ErrUnkeyed, f.Path)
		}
		content := "deleted"
		if f.Head != nil || f.HeadMode != "" {
			sum := sha256.Sum256(f.Head)
			content = f.HeadMode + " " + hex.EncodeToString(sum[:])
		}
		part("file "+f.Path, content)
	}
	var units []string
	for lang, us := range r.units {
		for _, u := range us {
			units = append(units, unitKey(lang, u))
		}
	}
	slices.Sort(units)
	part("units", strings.Join(units, "\x00"))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// reuseBefore reads the before snapshot's stored run and repeats, if there
// are some for its key, and reports whether it did; like the base's, a
// missing key, a miss, a store error or an undecodable value leave the
// snapshot to run. It runs beside the runs, before the before snapshot's
// slot comes (runSides).
func (r *checkRun) reuseBefore() bool {
	if r.beforeKeyable() != nil {
		return false
	}
	<-r.baseKeyDone
	key, err := r.beforeKey()
	if err != nil {
		// The base's note says why when its key failed.
		r.p.Step("the run of the change's tests on the base is not kept: %v", err)
		return false
	}
	r.beforeKeyHex = key
	data, at, ok, err := r.g.BaseResults.Get(r.ctx, key)
	if err != nil || !ok {
		return false
	}
	s, repeats, err := decodeRun(beforeKeyVersion, key, r.beforeDir, data)
	if err != nil {
		r.p.Step("ignoring the stored run of the change's tests on the base: %v", err)
		return false
	}
	r.before = s
	r.storedRepeats = map[string][]TestResult{}
	collect(r.storedRepeats, repeats)
	r.rep.BeforeReused = &BaseReuse{Key: key[:12], StoredAt: at.UTC()}
	r.beforeNote = fmt.Sprintf("the run of the change's tests on the base (and its repeats) reused from %s, key %s: the base's code and the head's tests are those of an earlier check (bcode check --no-cache runs it)",
		at.UTC().Format(time.RFC3339), key[:12])
	r.startHeadRepeats()
	return true
}

// keepBefore stores the before snapshot's run and every repeat round it
// has, stored or run here, when it ran here or more rounds ran; a round
// that timed out or met an environment error is not kept (its test runs
// again next time). A store that refuses it changes nothing of this check.
func (r *checkRun) keepBefore(ran []TestResult) {
	if r.beforeKeyHex == "" {
		return
	}
	reused := r.rep.BeforeReused != nil
	if !reused && !storable(r.before, r.retried["before"]) {
		return
	}
	var kept []TestResult
	for _, res := range ran {
		if res.Outcome != Timeout && res.Outcome != EnvError {
			kept = append(kept, res)
		}
	}
	if reused && len(kept) == 0 {
		return
	}
	for _, rs := range r.storedRepeats {
		kept = append(kept, rs...)
	}
	data, err := encodeRun(beforeKeyVersion, r.beforeKeyHex, r.before, kept)
	if err == nil {
		err = r.g.BaseResults.Put(r.ctx, r.beforeKeyHex, data)
	}
	if err != nil {
		r.p.Step("not storing the run of the change's tests on the base: %v", err)
	}
}

// storedRounds are rounds of t's stored repeats, or nil when fewer are
// stored.
func (r *checkRun) storedRounds(t Test, rounds int) []TestResult {
	rs := r.storedRepeats[t.ID()]
	if len(rs) < rounds {
		return nil
	}
	return rs[:rounds]
}

// headRepeats are the head's repeat rounds started beside the head's run.
// With the before snapshot's run read from the store, the only tests that
// can be fail-to-pass candidates are the ones that fail there; their
// rounds start at once, each in a process of its own, in a snapshot of the
// head of their own (a run beside the head's suite in its directory could
// meet what the suite's tests write there), and a test the head's run does
// not make a candidate has its rounds discarded.
type headRepeats struct {
	done  chan struct{}
	tests map[string]bool // by Test.ID
	res   []TestResult
	err   error
}

// startHeadRepeats starts the head's repeat rounds of every candidate unit
// test that fails on the before snapshot (judged as failToPass judges it).
func (r *checkRun) startHeadRepeats() {
	rounds := r.cfg.Gate.FlakeRuns - 1
	if rounds <= 0 {
		return
	}
	in := map[string]bool{}
	for lang, us := range r.units {
		for _, u := range us {
			in[unitKey(lang, u)] = true
		}
	}
	var maybe []Test
	var measured time.Duration
	for _, t := range candidateTests(in, r.before) {
		if b := r.g.judgeBase(r.change, r.before.outcome(t)); b.Outcome == Fail {
			maybe = append(maybe, t)
			measured += b.Duration
		}
	}
	if len(maybe) == 0 {
		return
	}
	hr := &headRepeats{done: make(chan struct{}), tests: map[string]bool{}}
	for _, t := range maybe {
		hr.tests[t.ID()] = true
	}
	r.headRepeats = hr
	opts := RunOptions{Count: rounds, Timeout: r.load.Deadline(r.cfg.Gate.TestTimeout.Duration, measured), Separate: true}
	go func() {
		defer close(hr.done)
		defer r.timing("repeat_head_early", time.Now())
		dir, err := r.change.Workspace.Materialize(r.ctx, HeadSide, nil)
		if err != nil {
			hr.err = err
			return
		}
		for lang, ts := range groupByLanguage(maybe) {
			res, err := r.g.adapter(lang).RunTests(r.ctx, r.g.Runner, dir, ts, opts)
			for _, x := range res {
				x.Detail = strings.ReplaceAll(x.Detail, dir, r.headDir)
				hr.res = append(hr.res, x)
			}
			if err != nil {
				hr.err = err
				return
			}
		}
	}()
}

// takeHeadRepeats are the early head rounds of f2p, once they end; false
// when none started, one of f2p is not among them, or they failed (the
// rounds then run as usual).
func (r *checkRun) takeHeadRepeats(f2p []Test) ([]TestResult, bool) {
	hr := r.headRepeats
	if hr == nil {
		return nil, false
	}
	for _, t := range f2p {
		if !hr.tests[t.ID()] {
			return nil, false
		}
	}
	<-hr.done
	if hr.err != nil {
		return nil, false
	}
	want := map[string]bool{}
	for _, t := range f2p {
		want[t.ID()] = true
	}
	var out []TestResult
	for _, x := range hr.res {
		if want[x.Test.ID()] {
			out = append(out, x)
		}
	}
	return out, true
}
