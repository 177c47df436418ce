package verify

import "slices"

// A task made with --reproduce pins the tests that failed on its base: its
// oracle. The agent's change need not touch them (the fix is in the code),
// so the gate makes their units candidates itself, and an oracle test
// earns credit by failing on the base and passing on the head in every
// run: the base's own version failing on the base, which for a modified
// test means the base was already broken, is here the point.

// ReasonOracleFlipped: an oracle test failed on the base and passes with
// the change, every run agreeing.
const ReasonOracleFlipped = "oracle_flipped"

func init() {
	// Beside the gate's table: this file owns the oracle's reasons.
	reasonText[ReasonOracleFlipped] = "an oracle test: fails on the base and passes with the change in every run"
}

// oracleIDs are the oracle's test IDs, in order.
func (g *Gate) oracleIDs() []string {
	if len(g.Oracle) == 0 {
		return nil
	}
	ids := make([]string, len(g.Oracle))
	for i, t := range g.Oracle {
		ids[i] = t.ID()
	}
	return ids
}

// addOracleUnits makes the oracle's units candidates.
func (r *checkRun) addOracleUnits() {
	for _, t := range r.g.Oracle {
		if r.g.adapter(t.Language) == nil || slices.Contains(r.units[t.Language], t.Package) {
			continue
		}
		r.units[t.Language] = append(r.units[t.Language], t.Package)
		r.nUnits++
	}
}

// creditOracle marks the oracle's tests in the report, and credits those
// that flipped: failing on the base (the untouched base too) and passing
// on the head, every run. credit judged them as modified tests whose base
// version already fails (base_already_broken).
func (r *checkRun) creditOracle() {
	if len(r.g.Oracle) == 0 {
		return
	}
	oracle := map[string]bool{}
	for _, t := range r.g.Oracle {
		oracle[t.ID()] = true
	}
	listed := map[string]bool{}
	for i := range r.rep.Tests {
		tr := &r.rep.Tests[i]
		id := testReportID(*tr)
		if !oracle[id] {
			continue
		}
		listed[id] = true
		tr.Oracle = true
		if tr.Reason == ReasonBaseBroken && tr.BaseOutcome == Fail && tr.HeadOutcome == Pass {
			tr.Credited, tr.Reason, tr.ReasonText = true, ReasonOracleFlipped, reasonText[ReasonOracleFlipped]
			r.credited[id] = true
			r.creditedTests = append(r.creditedTests, Test{Language: tr.Language, Package: tr.Package, File: tr.File, Name: tr.Name})
		}
	}
	for _, t := range r.g.Oracle {
		if !listed[t.ID()] {
			// Not a candidate that reported: it did not run on either side.
			tr := judge(t, r.baseRuns[t.ID()], r.headRuns[t.ID()], nil)
			tr.Oracle, tr.Credited = true, false
			r.rep.Tests = append(r.rep.Tests, tr)
		}
	}
}
