package server

import (
	"encoding/json"
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
