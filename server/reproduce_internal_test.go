package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
)

// The panel's words for reproduction and levels come from the ledger's
// fields; not_reproducible ends a run as verified, blocked and failed do.
func TestReproduceEventSummaries(t *testing.T) {
	for _, c := range []struct {
		kind engine.EventKind
		data any
		want string
	}{
		{engine.EventCheckFinished, map[string]any{"verdict": "green", "level": "V2"}, "check: green (level V2)"},
		{engine.EventCheckFinished, map[string]any{"verdict": "verified"}, "check: verified"},
		{engine.EventReproduced, map[string]any{"failing": []any{map[string]any{"name": "TestAbs"}, map[string]any{"name": "TestNeg"}}}, "reproduced on the base: 2 failing test(s) pinned as the oracle"},
		{engine.EventNotReproducible, map[string]any{"code": "passes_on_base"}, "not reproducible: passes on base"},
	} {
		raw, _ := json.Marshal(c.data)
		if got := eventSummary(engine.Event{Kind: c.kind, Data: raw}); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.kind, raw, got, c.want)
		}
	}
	if !endsRun(engine.EventNotReproducible) || endsRun(engine.EventReproduced) {
		t.Error("not_reproducible ends a run; reproduced does not")
	}
}

func TestTestAt(t *testing.T) {
	py := strings.Split("import pytest\n\n\ndef helper():\n    return 1\n\n\ndef test_top():\n    assert helper() == 2\n\n\nclass TestCalc:\n    @pytest.mark.slow\n    def test_neg(self):\n        assert -1 == 1\n\n    def other(self):\n        pass\n", "\n")
	goSrc := strings.Split("package calc\n\nimport \"testing\"\n\nfunc helper() int { return 1 }\n\nfunc TestAbs(t *testing.T) {\n\tif helper() != 2 {\n\t\tt.Fatal()\n\t}\n}\n", "\n")
	for _, c := range []struct {
		rel   string
		lines []string
		line  int
		want  string
	}{
		{"tests/test_calc.py", py, 8, "python3 -m pytest tests/test_calc.py::test_top"},
		{"tests/test_calc.py", py, 14, "python3 -m pytest tests/test_calc.py::TestCalc::test_neg"},
		{"tests/test_calc.py", py, 4, ""},
		{"tests/test_calc.py", py, 17, ""},
		{"calc.py", py, 8, ""},
		{"calc/calc_test.go", goSrc, 8, "go test ./calc -run '^TestAbs$'"},
		{"calc_test.go", goSrc, 6, "go test . -run '^TestAbs$'"},
		{"calc/calc_test.go", goSrc, 4, ""},
		{"calc/calc_test.go", goSrc, 2, ""},
		{"calc/my calc_test.go", goSrc, 8, ""},
	} {
		got, ok := testAt(c.rel, c.lines, c.line)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s line %d: %q %v, want %q", c.rel, c.line+1, got, ok, c.want)
		}
	}
}
