package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/server/lsp"
)

// Settings are what a user changes while bcode-ls runs: sent as
// initializationOptions at start and in workspace/didChangeConfiguration
// after, either flat or under a "bcode" key (as VS Code sends its section).
type Settings struct {
	// EvidenceOnSave runs evidence after saves and changes on disk.
	EvidenceOnSave bool `json:"evidenceOnSave"`
	// EvidenceOnOpen runs evidence as soon as the workspace is open, so
	// diagnostics show before the first save and after a restart.
	EvidenceOnOpen bool `json:"evidenceOnOpen"`
	// NotCovered is how mutants no test reaches are shown: "line" (one
	// Information diagnostic per line, naming how many), "each" (one per
	// mutant) or "off". Survivors are always one Warning each.
	NotCovered string `json:"notCovered"`
}

// Values of Settings.NotCovered.
const (
	NotCoveredLine = "line"
	NotCoveredEach = "each"
	NotCoveredOff  = "off"
)

// DefaultSettings are the settings before the client says otherwise.
var DefaultSettings = Settings{EvidenceOnSave: true, EvidenceOnOpen: true, NotCovered: NotCoveredLine}

// settingsPatch is Settings with every field optional.
type settingsPatch struct {
	EvidenceOnSave *bool   `json:"evidenceOnSave"`
	EvidenceOnOpen *bool   `json:"evidenceOnOpen"`
	NotCovered     *string `json:"notCovered"`
}

var settingNames = []string{"evidenceOnSave", "evidenceOnOpen", "notCovered"}

// applySettings returns cur with what raw sets, or an error naming the
// setting that is wrong (then nothing changes). Keys bcode does not know
// are an error too, so a misspelt setting is said, not ignored.
func applySettings(cur Settings, raw json.RawMessage) (Settings, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return cur, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return cur, fmt.Errorf("settings must be a JSON object: %v", err)
	}
	if sec, ok := top["bcode"]; ok {
		// A fresh map: Unmarshal into top would merge and keep "bcode".
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(sec, &inner); err != nil {
			return cur, fmt.Errorf("settings: bcode must be an object: %v", err)
		}
		top = inner
	}
	var unknown []string
	for k := range top {
		known := false
		for _, n := range settingNames {
			known = known || k == n
		}
		if !known {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return cur, fmt.Errorf("unknown setting bcode.%s (bcode-ls knows %s)", strings.Join(unknown, ", bcode."), strings.Join(settingNames, ", "))
	}
	b, _ := json.Marshal(top)
	var p settingsPatch
	if err := json.Unmarshal(b, &p); err != nil {
		var te *json.UnmarshalTypeError
		if ok := asTypeError(err, &te); ok {
			return cur, fmt.Errorf("setting bcode.%s must be a %s, not a %s", te.Field, goKind(te.Type.Kind().String()), te.Value)
		}
		return cur, fmt.Errorf("settings: %v", err)
	}
	next := cur
	if p.EvidenceOnSave != nil {
		next.EvidenceOnSave = *p.EvidenceOnSave
	}
	if p.EvidenceOnOpen != nil {
		next.EvidenceOnOpen = *p.EvidenceOnOpen
	}
	if p.NotCovered != nil {
		switch *p.NotCovered {
		case NotCoveredLine, NotCoveredEach, NotCoveredOff:
			next.NotCovered = *p.NotCovered
		default:
			return cur, fmt.Errorf("setting bcode.notCovered must be %q, %q or %q, not %q", NotCoveredLine, NotCoveredEach, NotCoveredOff, *p.NotCovered)
		}
	}
	return next, nil
}

func asTypeError(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

// goKind names a Go kind the way a settings file does.
func goKind(k string) string {
	switch k {
	case "bool":
		return "boolean"
	case "ptr", "string":
		return "string"
	}
	return k
}

// settings is the current settings.
func (s *Server) settings() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set
}

// DidChangeConfiguration applies new settings; a bad one is said to the
// user and changes nothing.
func (s *Server) DidChangeConfiguration(ctx context.Context, raw json.RawMessage) {
	// Some clients send {"settings": null} and expect the server to pull:
	// bcode-ls takes only what is pushed.
	s.mu.Lock()
	prev := s.set
	next, err := applySettings(prev, raw)
	if err == nil {
		s.set = next
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("settings refused", "err", err)
		_ = s.client.ShowMessage(context.Background(), lsp.MessageError, "bcode-ls: "+err.Error())
		return
	}
	s.log.Info("settings", "evidenceOnSave", next.EvidenceOnSave, "evidenceOnOpen", next.EvidenceOnOpen, "notCovered", next.NotCovered)
	if next.EvidenceOnSave && !prev.EvidenceOnSave {
		s.startWatchingOnce()
	}
	if next.NotCovered != prev.NotCovered {
		s.requestRepublish()
	}
}
