package rust

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// crateRun is one `cargo test` of a suite: a crate, the targets selected
// (none: cargo's default, doc tests included) and the units it reaches.
type crateRun struct {
	crate string
	flags []string
	units []string
}

// RunSuite implements verify.Adapter. targets are units (Test.Package);
// nil runs every crate's default test targets and its doc tests. Each
// crate compiles first (a crate that does not compile is BuildError for
// its units), then runs with --no-fail-fast; Results hold every test line
// libtest printed, by ID.
func (a *Adapter) RunSuite(ctx context.Context, r sandbox.Runner, dir string, targets []string, timeout time.Duration) (verify.SuiteResult, error) {
	start := time.Now()
	runs, err := planSuite(dir, targets)
	if err != nil {
		return verify.SuiteResult{}, err
	}
	res := verify.SuiteResult{Outcome: verify.Pass}
	if len(runs) == 0 {
		return res, nil
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = start.Add(timeout)
	}
	for _, cr := range runs {
		res.Targets = append(res.Targets, cr.units...)
		if err := a.runCrate(ctx, r, dir, cr, deadline, &res); err != nil {
			return res, err
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}

// planSuite groups targets by crate; nil targets are every crate whole.
func planSuite(dir string, targets []string) ([]crateRun, error) {
	if targets == nil {
		crates, err := findCrates(dir)
		if err != nil {
			return nil, fmt.Errorf("rust adapter: finding crates in %s: %w", dir, err)
		}
		var out []crateRun
		for _, c := range crates {
			out = append(out, crateRun{crate: c.dir, units: c.units})
		}
		return out, nil
	}
	byCrate := map[string]*crateRun{}
	var order []string
	for _, t := range targets {
		c, flags, ok := splitUnit(t)
		if !ok {
			return nil, fmt.Errorf("rust adapter: target %q is not the root file of a cargo test target", t)
		}
		cr, ok := byCrate[c]
		if !ok {
			cr = &crateRun{crate: c}
			byCrate[c] = cr
			order = append(order, c)
		}
		cr.flags = append(cr.flags, binFlags(dir, c, flags)...)
		cr.units = append(cr.units, t)
	}
	sort.Strings(order)
	out := make([]crateRun, len(order))
	for i, c := range order {
		out[i] = *byCrate[c]
	}
	return out, nil
}

// runCrate builds and runs one crate's selected targets into res.
func (a *Adapter) runCrate(ctx context.Context, r sandbox.Runner, dir string, cr crateRun, deadline time.Time, res *verify.SuiteResult) error {
	left := func() time.Duration {
		if deadline.IsZero() {
			return 0
		}
		return max(time.Until(deadline), time.Millisecond)
	}
	o, detail, err := a.build(ctx, r, dir, cr.crate, cr.flags, left())
	if err != nil {
		return err
	}
	if o == verify.BuildError && len(cr.units) > 1 {
		// One target that does not compile stops cargo for all; build
		// each to tell which, and run the others.
		if cr, err = a.buildEach(ctx, r, dir, cr, left, res); err != nil || len(cr.units) == 0 {
			return err
		}
	} else if o != verify.Pass {
		a.unitsEnd(res, cr, o, detail)
		return nil
	}
	out, err := a.cargoTest(ctx, r, dir, cr.crate, cr.flags, nil, left(), 0)
	if errors.Is(err, sandbox.ErrNotFound) {
		a.unitsEnd(res, cr, verify.EnvError, a.cargo()+" not found: "+installHint)
		return nil
	}
	if err != nil {
		return fmt.Errorf("rust adapter: cargo test in %s: %w", cr.crate, err)
	}
	text := string(out.Stdout)
	failed := 0
	for _, run := range parseLibtest(text) {
		unit := inCrate(cr.crate, run.source)
		for _, c := range run.cases {
			t := verify.Test{Language: a.Language(), Package: unit, Name: c.name}
			res.Results = append(res.Results, verify.TestResult{Test: t, Outcome: c.outcome, Detail: c.detail})
			if c.outcome == verify.Fail {
				failed++
				res.Failed = append(res.Failed, t.ID())
			}
		}
	}
	for _, u := range cr.units {
		res.Units = append(res.Units, verify.UnitResult{Unit: u, Outcome: verify.Pass})
	}
	switch {
	case out.TimedOut:
		worsen(res, verify.Timeout, fmt.Sprintf("cargo test in %s was stopped at the suite's timeout:\n%s", cr.crate, tail(text)))
	case failed > 0:
		worsen(res, verify.Fail, fmt.Sprintf("%d tests failed in %s", failed, cr.crate))
	case out.ExitCode != 0:
		// Nothing printed FAILED, yet cargo failed: a doc test that does
		// not compile, a test binary that crashed.
		res.Failed = append(res.Failed, cr.crate)
		worsen(res, verify.Fail, excerpt(tail(text)))
	}
	return nil
}

// buildEach builds a crate's units one by one, records those that do not
// build, and returns the run of the others, each selected by its flags.
func (a *Adapter) buildEach(ctx context.Context, r sandbox.Runner, dir string, cr crateRun, left func() time.Duration, res *verify.SuiteResult) (crateRun, error) {
	good := crateRun{crate: cr.crate}
	for _, u := range cr.units {
		_, flags, ok := splitUnit(u)
		if !ok {
			continue
		}
		o, detail, err := a.build(ctx, r, dir, cr.crate, flags, left())
		if err != nil {
			return good, err
		}
		if o != verify.Pass {
			a.unitsEnd(res, crateRun{crate: u, units: []string{u}}, o, detail)
			continue
		}
		good.flags = append(good.flags, flags...)
		good.units = append(good.units, u)
	}
	return good, nil
}

// unitsEnd records that none of a crate run's units could run.
func (a *Adapter) unitsEnd(res *verify.SuiteResult, cr crateRun, o verify.Outcome, detail string) {
	for _, u := range cr.units {
		res.Units = append(res.Units, verify.UnitResult{Unit: u, Outcome: o, Detail: detail})
	}
	res.Failed = append(res.Failed, cr.crate)
	worsen(res, o, detail)
}

// severity orders suite outcomes: the worst one found is the suite's.
var severity = map[verify.Outcome]int{verify.Pass: 0, verify.Fail: 1, verify.BuildError: 2, verify.Timeout: 3, verify.EnvError: 4}

func worsen(res *verify.SuiteResult, o verify.Outcome, detail string) {
	if severity[o] > severity[res.Outcome] {
		res.Outcome = o
	}
	if detail != "" {
		res.Detail = strings.TrimSpace(res.Detail + "\n" + detail)
	}
}
