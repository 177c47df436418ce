package ledger

import (
	"encoding/json"
	"fmt"
	"time"
)

// timeLayout is RFC 3339 in UTC with a fixed nine-digit fraction: unlike
// time.RFC3339Nano it does not drop trailing zeros, so stored times compare
// correctly as strings (ORDER BY, <, >) and still parse as RFC 3339.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// storeTime is formatTime as TaskValues takes it.
func storeTime(t time.Time) any { return formatTime(t) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// jsonText stores an empty raw message as NULL and anything else as TEXT
// after checking it is JSON, so a bad value is the caller's clear error
// rather than a CHECK constraint failure.
func jsonText(what string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if err := CheckJSON(what, raw); err != nil {
		return nil, err
	}
	return string(raw), nil
}

// nullInt stores 0 (the "none" of the engine types) as NULL.
func nullInt(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
