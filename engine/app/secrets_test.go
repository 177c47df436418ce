package app_test

import (
	"testing"

	"github.com/bcode-dev/bcode/engine/app"
)

// TestSecretFindingFingerprint: a baseline entry is gitleaks' form,
// COMMIT:PATH:RULE:LINE with the full commit id, so the baselines written
// so far keep matching.
func TestSecretFindingFingerprint(t *testing.T) {
	f := app.SecretFinding{Commit: "0123456789abcdef0123456789abcdef01234567", Path: "a/b.env", Line: 3, RuleID: "generic-api-key", Redacted: "abcd…(20)"}
	const want = "0123456789abcdef0123456789abcdef01234567:a/b.env:generic-api-key:3"
	if got := f.Fingerprint(); got != want {
		t.Errorf("Fingerprint() = %q, want %q", got, want)
	}
}
