package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"

	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// TestPythonSurvivorInTheEditor: a save of a .py file publishes its
// surviving mutant on the exact range of the original expression, through
// the same report and diagnostics as Go.
func TestPythonSurvivorInTheEditor(t *testing.T) {
	testenv.SystemPytest(t)
	e, ctx := setup(t, "pyboundary.txtar", server.Options{})
	const file = "shop/price.py"
	if err := e.Open(ctx, file); err != nil {
		t.Fatal(err)
	}
	ds, byID := saveAndAwaitSurvivors(t, ctx, e, file, "if n >= 10:", "if n > 10:")
	text := e.Buffer(file)
	var boundary bool
	for _, d := range warnings(ds) {
		var data server.MutantData
		if err := json.Unmarshal(d.Data, &data); err != nil || data.ID == "" {
			t.Fatalf("diagnostic data %s does not carry a mutant ID: %v", d.Data, err)
		}
		id := data.ID
		m, ok := byID[id]
		if !ok || m.Verdict != mutate.Survived || m.File != file {
			t.Fatalf("diagnostic names mutant %q, which the report does not list as a survivor in %s", id, file)
		}
		if got := rangeText(text, d.Range); got != m.Original {
			t.Errorf("range %+v selects %q, want %q", d.Range, got, m.Original)
		}
		if m.Operator == mutate.OpConditionalBoundary {
			boundary = true
			if d.Range.Start.Line != 2 || m.Mutated != "n >= 10" || !strings.Contains(d.Message, "n >= 10") {
				t.Errorf("boundary survivor %q on line %d: %q", m.Mutated, d.Range.Start.Line, d.Message)
			}
		}
	}
	if !boundary {
		t.Fatalf("no conditional_boundary survivor among %+v", warnings(ds))
	}
}
