package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/bcode-dev/bcode/verify/secrets"
)

// SecretFinding is a secret in a repository's history, as a surface may
// show it: redacted, never the value itself (a report of a leak must not
// leak).
type SecretFinding struct {
	Commit      string // the full id of the commit that added the line
	Path        string
	Line        int // 1-based; 0 for a finding about the file as a whole
	RuleID      string
	Description string
	Redacted    string // at most the value's first four characters, and its length
}

// Fingerprint names the finding the way gitleaks' baselines do:
// COMMIT:PATH:RULE:LINE, with the full commit id.
func (f SecretFinding) Fingerprint() string {
	return f.Commit + ":" + f.Path + ":" + f.RuleID + ":" + strconv.Itoa(f.Line)
}

// ErrSecretRules: the secret scanner's rules could not be loaded.
var ErrSecretRules = errors.New("loading the secret rules")

// ScanSecretHistory scans every line that any commit reachable from any
// ref of the repository at dir added, with gitleaks' default rules alone:
// the repository's own .gitleaks.toml, .gitleaksignore and baselines are
// never read, so the history being judged cannot allowlist itself.
// Findings are in git log order (newest commit first), then by path and
// line. A failure to load the rules is an ErrSecretRules.
func (e *Engine) ScanSecretHistory(ctx context.Context, dir string) ([]SecretFinding, error) {
	scanner, err := secrets.NewScanner()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSecretRules, err)
	}
	found, err := secrets.ScanGitHistory(ctx, dir, scanner)
	if err != nil {
		return nil, err
	}
	out := make([]SecretFinding, len(found))
	for i, f := range found {
		out[i] = SecretFinding{Commit: f.Commit, Path: f.Path, Line: f.Line, RuleID: f.RuleID, Description: f.Description, Redacted: f.Redacted}
	}
	return out, nil
}
