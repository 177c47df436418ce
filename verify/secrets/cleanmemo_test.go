package secrets

import (
	"errors"
	"strings"
	"testing"
)

// TestCleanMemoRemembersOnlyCleanTexts: a text scanned clean is remembered
// on disk, so the next memo redacts it without building the scanner; a
// text with a secret is redacted by the scanner every time, never
// remembered; a scanner that cannot be built withholds the text whole.
func TestCleanMemoRemembersOnlyCleanTexts(t *testing.T) {
	dir := t.TempDir()
	builds := 0
	build := func() (*Scanner, error) { builds++; return NewScanner() }
	clean := "func Add(a, b int) int { return a + b }\n"
	secret := "token := \"" + fakeGitHubToken() + "\"\n"

	m := NewCleanMemo(dir, build)
	if out, n := m.Redact(clean); out != clean || n != 0 {
		t.Fatalf("clean text: %q, %d", out, n)
	}
	if out, n := m.Redact(secret); n != 1 || strings.Contains(out, fakeGitHubToken()) {
		t.Fatalf("secret not redacted: %q, %d", out, n)
	}
	m.Save()
	if builds != 1 {
		t.Fatalf("scanner built %d times, want once", builds)
	}

	m = NewCleanMemo(dir, build)
	if out, n := m.Redact(clean); out != clean || n != 0 || m.Scanned() {
		t.Fatalf("remembered clean text: %q, %d, scanned %v", out, n, m.Scanned())
	}
	if out, n := m.Redact(secret); n != 1 || strings.Contains(out, fakeGitHubToken()) || !m.Scanned() {
		t.Fatalf("a secret once seen is scanned again: %q, %d, scanned %v", out, n, m.Scanned())
	}

	broken := NewCleanMemo(t.TempDir(), func() (*Scanner, error) { return nil, errors.New("no rules") })
	if out, n := broken.Redact(secret); n != 1 || strings.Contains(out, fakeGitHubToken()) || broken.Err() == nil {
		t.Fatalf("without rules: %q, %d, err %v", out, n, broken.Err())
	}
}
