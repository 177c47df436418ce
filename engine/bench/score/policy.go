package score

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

// defaultPolicy is the repository's policy file: the gate's rules when
// the user names none, and what a user's file is read over.
//
//go:embed policy.toml
var defaultPolicy []byte

// DefaultPolicyTOML is the default policy file's text.
func DefaultPolicyTOML() []byte { return bytes.Clone(defaultPolicy) }

// Policy is the gate's rules: for each rate, figure and count, how much
// it may worsen and whether a regression blocks or warns.
type Policy struct {
	Rates   RateRules   `toml:"rates"`
	Flipped FlipRule    `toml:"flipped_tasks"`
	Figures FigureRules `toml:"figures"`
	// Security is the rule of security failures: any increase regresses.
	Security CountRule `toml:"security_failures"`
}

// RateRules are the rules of the rates, by rate.
type RateRules struct {
	Success         RateRule `toml:"success"`
	FalseAcceptance RateRule `toml:"false_acceptance"`
	FalseRejection  RateRule `toml:"false_rejection"`
}

// RateRule: a rate regresses when the two 90% Wilson intervals do not
// overlap and it moved the wrong way by more than Tolerance (a fraction).
type RateRule struct {
	Tolerance float64 `toml:"tolerance"`
	Blocking  bool    `toml:"blocking"`
	// Breakdowns also gates each group, language and split.
	Breakdowns bool `toml:"breakdowns"`
}

// FlipRule: task success regresses when at least Min tasks passed in
// every baseline trial and failed in every candidate trial.
type FlipRule struct {
	Min      int  `toml:"min"`
	Blocking bool `toml:"blocking"`
}

// FigureRules are the rules of the figures, by figure.
type FigureRules struct {
	TokensPerSuccess FigureRule `toml:"tokens_per_success"`
	SecondsMedian    FigureRule `toml:"seconds_median"`
	SecondsP90       FigureRule `toml:"seconds_p90"`
	ModelCalls       FigureRule `toml:"model_calls"`
	ServerRSS        FigureRule `toml:"server_rss_bytes"`
}

// byName is each figure's rule by the figure's name.
func (f FigureRules) byName() map[string]FigureRule {
	return map[string]FigureRule{
		FigureTokensPerSuccess: f.TokensPerSuccess, FigureSecondsMedian: f.SecondsMedian,
		FigureSecondsP90: f.SecondsP90, FigureModelCalls: f.ModelCalls, FigureServerRSS: f.ServerRSS,
	}
}

// FigureRule: a figure regresses when it is worse than the baseline's by
// more than Tolerance (a fraction of the baseline's value), widened to
// the baseline's own spread across trials.
type FigureRule struct {
	Tolerance float64 `toml:"tolerance"`
	Blocking  bool    `toml:"blocking"`
}

// CountRule: a count regresses on any increase.
type CountRule struct {
	Blocking bool `toml:"blocking"`
}

// DefaultPolicy is the repository's policy (policy.toml).
var DefaultPolicy = sync.OnceValue(func() Policy {
	p, err := parsePolicy(Policy{}, "policy.toml", defaultPolicy)
	if err != nil {
		panic(err) // TestDefaultPolicy keeps the embedded file valid
	}
	return p
})

// ParsePolicy reads a policy file (named name in errors) over the
// default: it need only name what it changes. Unknown keys are an error,
// so a typo never silently keeps a default.
func ParsePolicy(name string, data []byte) (Policy, error) {
	return parsePolicy(DefaultPolicy(), name, data)
}

// Over reads a policy file (named name in errors) over p: a suite's own
// policy over the one the gate was given.
func (p Policy) Over(name string, data []byte) (Policy, error) {
	return parsePolicy(p, name, data)
}

func parsePolicy(over Policy, name string, data []byte) (Policy, error) {
	p := over
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		var sme *toml.StrictMissingError
		if errors.As(err, &sme) {
			return Policy{}, fmt.Errorf("%w: %s: %s", ErrPolicy, name, strings.TrimSpace(sme.String()))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return Policy{}, fmt.Errorf("%w: %s:%d:%d: %v", ErrPolicy, name, row, col, de)
		}
		return Policy{}, fmt.Errorf("%w: %s: %v", ErrPolicy, name, err)
	}
	if err := p.validate(); err != nil {
		return Policy{}, fmt.Errorf("%w: %s: %v", ErrPolicy, name, err)
	}
	return p, nil
}

func (p Policy) validate() error {
	rates := []struct {
		name string
		rule RateRule
	}{{"success", p.Rates.Success}, {"false_acceptance", p.Rates.FalseAcceptance}, {"false_rejection", p.Rates.FalseRejection}}
	for _, r := range rates {
		if !(r.rule.Tolerance >= 0 && r.rule.Tolerance <= 1) {
			return fmt.Errorf("rates.%s.tolerance = %v: a fraction between 0 and 1 (0.05 is five points)", r.name, r.rule.Tolerance)
		}
	}
	figures := p.Figures.byName()
	for _, name := range FigureNames {
		if t := figures[name].Tolerance; !(t >= 0) || math.IsInf(t, 1) {
			return fmt.Errorf("figures.%s.tolerance = %v: a fraction of the baseline's value, 0 or more (0.25 is 25%%)", name, t)
		}
	}
	if p.Flipped.Min < 1 {
		return fmt.Errorf("flipped_tasks.min = %d: at least 1", p.Flipped.Min)
	}
	return nil
}
