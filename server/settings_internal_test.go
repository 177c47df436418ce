package server

import (
	"encoding/json"
	"testing"
)

// TestApplySettings: flat and "bcode"-sectioned forms, every refusal named.
func TestApplySettings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Settings
		err  string
	}{
		{`null`, DefaultSettings, ""},
		{`{}`, DefaultSettings, ""},
		{`{"notCovered":"each"}`, Settings{true, true, NotCoveredEach}, ""},
		{`{"bcode":{"notCovered":"off","evidenceOnOpen":false}}`, Settings{true, false, NotCoveredOff}, ""},
		{`{"bcode":{"evidenceOnSave":false}}`, Settings{false, true, NotCoveredLine}, ""},
		{`{"bcode":{"notCovered":"sometimes"}}`, DefaultSettings, `setting bcode.notCovered must be "line", "each" or "off", not "sometimes"`},
		{`{"bcode":{"evidenceOnSave":"yes"}}`, DefaultSettings, `setting bcode.evidenceOnSave must be a boolean, not a string`},
		{`{"bcode":{"notCoverd":"off"}}`, DefaultSettings, `unknown setting bcode.notCoverd (bcode-ls knows evidenceOnSave, evidenceOnOpen, notCovered)`},
		{`{"bcode":5}`, DefaultSettings, `settings: bcode must be an object: json: cannot unmarshal number into Go value of type map[string]json.RawMessage`},
		{`[1]`, DefaultSettings, `settings must be a JSON object: json: cannot unmarshal array into Go value of type map[string]json.RawMessage`},
	} {
		got, err := applySettings(DefaultSettings, json.RawMessage(tc.in))
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != tc.err || got != tc.want {
			t.Errorf("applySettings(%s) = %+v, %q; want %+v, %q", tc.in, got, msg, tc.want, tc.err)
		}
	}
}
