// Package score reads suite reports (engine/bench) into scorecards — each
// rate with its count, total and 90% Wilson interval, each figure with its
// spread across trials — and gates a candidate scorecard against a
// baseline under a policy (docs/evaluation.md).
package score
