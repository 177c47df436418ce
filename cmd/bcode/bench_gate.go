package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/pelletier/go-toml/v2"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench/score"
)

func init() {
	registerBench(benchSub{
		name:    "gate",
		summary: "compare a candidate scorecard with a baseline under a policy: exit 1 when a blocking rule regressed",
		run:     benchGate,
	})
}

// gatePair is a baseline and a candidate scorecard of one suite; suite
// is the directory's name under --dir, "" otherwise.
type gatePair struct {
	suite, baseline, candidate string
	policy                     string // the suite directory's policy.toml, read over the gate's; "" when it has none
}

// gateResult is one pair's decision, or why it has none.
type gateResult struct {
	score.Decision
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	Error     string `json:"error,omitempty"`
}

func benchGate(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode bench gate [--baseline FILE --candidate FILE] [--dir DIR] [--policy FILE] [--json]", stdout, stderr)
	fs.about = `Compares a candidate scorecard (bcode bench scorecard --out) with a baseline under a policy:
a table of each rule with the baseline's and the candidate's value, its verdict (ok, warn,
regressed) and why. --dir DIR gates DIR/SUITE/candidate.json against DIR/SUITE/baseline.json
for each suite directory, with DIR/SUITE/policy.toml, when there is one, read over the policy.
The default policy is engine/bench/score/policy.toml; a --policy file is read over it.
Scorecards of runs made differently (budgets, model, task definitions or set; a scripted
model against a model) are refused, saying which.

Exit 0 when no blocking rule regressed, 1 when one did, 2 when the scorecards are not
comparable or cannot be read, or on a usage error.`
	baseline := fs.String("baseline", "", "the baseline scorecard `FILE`")
	candidate := fs.String("candidate", "", "the candidate scorecard `FILE`")
	dir := fs.String("dir", "", "gate each suite directory of `DIR`: DIR/SUITE/baseline.json and DIR/SUITE/candidate.json")
	policyFile := fs.String("policy", "", "read the policy `FILE` over the default (docs/evaluation.md names its keys)")
	asJSON := fs.Bool("json", false, "print the decisions as JSON instead of the tables")
	show := fs.Bool("show-policy", false, "print the policy the gate would apply (the default file, or --policy read over it) and exit")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	if *show {
		return showPolicy(fs.Name(), *policyFile, stdout, stderr)
	}
	switch {
	case *dir != "" && (*baseline != "" || *candidate != ""):
		return fs.usageErr("give --dir or --baseline and --candidate, not both")
	case *dir == "" && (*baseline == "" || *candidate == ""):
		return fs.usageErr("give --baseline and --candidate, or --dir")
	}
	policy, err := readPolicy(*policyFile)
	if err != nil {
		errorf(stderr, fs.Name(), "%v", err)
		return exitUsage
	}
	pairs := []gatePair{{baseline: *baseline, candidate: *candidate}}
	if *dir != "" {
		if pairs, err = suitePairs(*dir); err != nil {
			errorf(stderr, fs.Name(), "%v", err)
			return exitUsage
		}
	}
	results := make([]gateResult, len(pairs))
	for i, p := range pairs {
		results[i] = gatePairOf(p, policy)
	}
	return reportGate(fs.Name(), results, *asJSON, stdout, stderr)
}

func readPolicy(path string) (score.Policy, error) {
	if path == "" {
		return score.DefaultPolicy(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return score.Policy{}, err
	}
	return score.ParsePolicy(path, data)
}

// showPolicy prints the default policy file as it is, comments and all,
// or the policy a --policy file makes of it.
func showPolicy(cmd, path string, stdout, stderr io.Writer) int {
	if path == "" {
		stdout.Write(score.DefaultPolicyTOML())
		return 0
	}
	p, err := readPolicy(path)
	if err == nil {
		err = toml.NewEncoder(stdout).Encode(p)
	}
	if err != nil {
		errorf(stderr, cmd, "%v", err)
		return exitUsage
	}
	return 0
}

// suitePairs is each suite directory of dir with its two scorecards; a
// directory missing either is an error, so no suite goes ungated. Hidden
// directories (.git) are not suites.
func suitePairs(dir string) ([]gatePair, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var pairs []gatePair
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := gatePair{
			suite:     e.Name(),
			baseline:  filepath.Join(dir, e.Name(), "baseline.json"),
			candidate: filepath.Join(dir, e.Name(), "candidate.json"),
		}
		for _, f := range []string{p.baseline, p.candidate} {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("suite directory %s: %v", filepath.Join(dir, e.Name()), err)
			}
		}
		if f := filepath.Join(dir, e.Name(), "policy.toml"); statOK(f) {
			p.policy = f
		}
		pairs = append(pairs, p)
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%s holds no suite directory (SUITE/baseline.json and SUITE/candidate.json)", dir)
	}
	return pairs, nil
}

// statOK says whether path names something that can be stat'ed; a
// policy.toml that cannot be read is then an error of its suite.
func statOK(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// gatePairOf reads a pair's scorecards and gates them.
func gatePairOf(p gatePair, policy score.Policy) gateResult {
	res := gateResult{Baseline: p.baseline, Candidate: p.candidate}
	base, err := readScorecard(p.baseline)
	if err == nil && p.policy != "" {
		// A suite's own rules, e.g. the verify suite's: the gate alone is
		// deterministic, so one task that flipped is a regression there.
		var data []byte
		if data, err = os.ReadFile(p.policy); err == nil {
			policy, err = policy.Over(p.policy, data)
		}
	}
	var cand score.Scorecard
	if err == nil {
		cand, err = readScorecard(p.candidate)
	}
	if err == nil && p.suite != "" && (string(base.Basis.Suite) != p.suite || string(cand.Basis.Suite) != p.suite) {
		err = fmt.Errorf("suite directory %s holds scorecards of suites %s and %s", p.suite, base.Basis.Suite, cand.Basis.Suite)
	}
	if err == nil {
		res.Decision, err = score.Gate(base, cand, policy)
	}
	if err != nil {
		res.Suite, res.Error = base.Basis.Suite, err.Error()
	}
	return res
}

func readScorecard(path string) (score.Scorecard, error) {
	f, err := os.Open(path)
	if err != nil {
		return score.Scorecard{}, err
	}
	defer f.Close()
	return score.ReadScorecard(path, f)
}

// reportGate prints the decisions and returns the exit code: 2 when a
// pair could not be gated, else 1 when a blocking rule regressed.
func reportGate(cmd string, results []gateResult, asJSON bool, stdout, stderr io.Writer) int {
	code := 0
	for _, r := range results {
		switch {
		case r.Error != "":
			errorf(stderr, cmd, "%s", r.Error)
			code = exitUsage
		case r.Regressed() && code == 0:
			code = 1
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			errorf(stderr, cmd, "%v", err)
			return exitUsage
		}
		return code
	}
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printDecision(stdout, r)
	}
	return code
}

func printDecision(w io.Writer, r gateResult) {
	if r.Error != "" {
		fmt.Fprintf(w, "%s against %s: NOT COMPARED (see the error)\n", r.Candidate, r.Baseline)
		return
	}
	fmt.Fprintf(w, "suite %s: %s against %s\n", r.Suite, r.Candidate, r.Baseline)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tBASELINE\tCANDIDATE\tVERDICT\tWHY")
	var regressed, warned []string
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Rule, f.Baseline, f.Candidate, f.Verdict, f.Why)
		switch f.Verdict {
		case score.Regressed:
			regressed = append(regressed, f.Rule)
		case score.Warn:
			warned = append(warned, f.Rule)
		}
	}
	tw.Flush()
	switch {
	case len(regressed) > 0:
		fmt.Fprintf(w, "REGRESSED: %s\n", strings.Join(regressed, "; "))
	case len(warned) > 0:
		fmt.Fprintf(w, "PASS with warnings: %s\n", strings.Join(warned, "; "))
	default:
		fmt.Fprintln(w, "PASS")
	}
}
