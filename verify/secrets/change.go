package secrets

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// ScanChange reports the secrets a change adds: only the head side's added
// or modified lines are read, so a secret already on the base is not blamed
// on the change. Each contiguous block of added lines is scanned as one
// piece, so a private key block added whole is found whole. A file whose
// name alone marks a key store (gitleaks' path rules) is reported when it is
// added or modified. Messages name the rule and the redacted value, never
// the secret.
func (s *Scanner) ScanChange(change *verify.Change) []verify.Finding {
	if change == nil {
		return nil
	}
	var out []verify.Finding
	for _, f := range change.Files {
		if f.Head == nil {
			continue
		}
		for _, sf := range s.scanAdded(f) {
			out = append(out, verify.Finding{
				Code:    verify.FindingSecret,
				Path:    sf.Path,
				Line:    sf.Line,
				Message: findingMessage(sf),
			})
		}
	}
	slices.SortStableFunc(out, func(a, b verify.Finding) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line))
	})
	return out
}

func findingMessage(f Finding) string {
	if f.Secret == "" {
		return fmt.Sprintf("secret file added (%s): %s", f.RuleID, f.Description)
	}
	return fmt.Sprintf("secret added (%s): %s %s", f.RuleID, f.Redacted, f.Description)
}

// scanAdded scans the changed line ranges of one file's head side.
func (s *Scanner) scanAdded(f verify.FileChange) []Finding {
	// Path rules first, on the name alone: they apply to binary key stores
	// whose content is never read as text.
	out := s.findings(f.Path, "", 0, "")
	if bytes.IndexByte(f.Head[:min(len(f.Head), 8000)], 0) >= 0 {
		return out
	}
	lines := strings.SplitAfter(string(f.Head), "\n")
	seen := map[Finding]bool{}
	for _, f := range out {
		seen[f] = true
	}
	for _, r := range f.Changed {
		start, end := max(r.Start, 1), min(r.End, len(lines))
		if start > end {
			continue
		}
		block, _ := StripInvisible(strings.Join(lines[start-1:end], ""))
		for _, sf := range s.findings(f.Path, block, start-1, "") {
			if !seen[sf] {
				seen[sf] = true
				out = append(out, sf)
			}
		}
	}
	return out
}
