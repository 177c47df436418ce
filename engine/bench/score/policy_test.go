package score

import (
	"errors"
	"strings"
	"testing"
)

// TestDefaultPolicy pins the repository's policy file: it parses and
// says what docs/evaluation.md says it does.
func TestDefaultPolicy(t *testing.T) {
	p, err := parsePolicy(Policy{}, "policy.toml", DefaultPolicyTOML())
	if err != nil {
		t.Fatal(err)
	}
	if p != DefaultPolicy() {
		t.Error("DefaultPolicy is not policy.toml")
	}
	if !p.Rates.Success.Blocking || p.Rates.Success.Tolerance != 0.05 || !p.Rates.FalseAcceptance.Blocking ||
		p.Flipped.Min != 2 || !p.Flipped.Blocking || !p.Security.Blocking || p.Figures.SecondsMedian.Blocking {
		t.Errorf("default policy %+v", p)
	}
	for name, r := range p.Figures.byName() {
		if r.Tolerance == 0 {
			t.Errorf("figures.%s has no tolerance in policy.toml", name)
		}
	}
}

func TestParsePolicyOverTheDefault(t *testing.T) {
	p, err := ParsePolicy("mine.toml", []byte("[rates.success]\ntolerance = 0.1\n\n[figures.seconds_p90]\nblocking = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultPolicy()
	if p.Rates.Success.Tolerance != 0.1 || p.Rates.Success.Blocking != def.Rates.Success.Blocking || !p.Figures.SecondsP90.Blocking ||
		p.Figures.SecondsP90.Tolerance != def.Figures.SecondsP90.Tolerance || p.Flipped != def.Flipped {
		t.Errorf("policy read over the default: %+v", p)
	}
}

func TestParsePolicyRefusesBadFiles(t *testing.T) {
	for text, want := range map[string]string{
		"[rates.sucess]\ntolerance = 0.1\n":         "rates.sucess",
		"[rates.success]\ntolerance = 5\n":          "rates.success.tolerance = 5",
		"[figures.seconds_median]\ntolerance = -1":  "figures.seconds_median.tolerance = -1",
		"[flipped_tasks]\nmin = 0\n":                "flipped_tasks.min = 0",
		"[rates.success]\nblocking = \"yes\"\n":     "mine.toml:2",
		"[security_failures]\nblocking = true\nx=1": "x",
	} {
		_, err := ParsePolicy("mine.toml", []byte(text))
		if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "mine.toml") {
			t.Errorf("%q: err %v, want ErrPolicy naming mine.toml and %q", text, err, want)
		}
	}
}
