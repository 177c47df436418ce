package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/bcode-dev/bcode/verify/mutate"
)

// EvidenceFormat is a way to print an evidence report; its value is the
// name ParseEvidenceFormat reads.
type EvidenceFormat string

// The formats of an evidence report.
const (
	// EvidenceText is the human summary: survivors first, then counts.
	EvidenceText EvidenceFormat = "text"
	// EvidenceJSON is the report as JSON.
	EvidenceJSON EvidenceFormat = "json"
	// EvidenceSARIF is SARIF 2.1.0, for code-scanning UIs.
	EvidenceSARIF EvidenceFormat = "sarif"
	// EvidenceGitHub is GitHub Actions workflow annotations.
	EvidenceGitHub EvidenceFormat = "github"
	// EvidenceGitHubSummary is the full list of mutants as Markdown, for
	// a GitHub job's step summary (annotations stop at ten of a kind).
	EvidenceGitHubSummary EvidenceFormat = "github-summary"
	// EvidenceMutationReport is mutation-testing-report-schema JSON, which
	// Stryker's HTML viewer reads.
	EvidenceMutationReport EvidenceFormat = "mutation-report"
)

// evidenceWriters are the renderers of each format.
var evidenceWriters = map[EvidenceFormat]func(io.Writer, *mutate.Report) error{
	EvidenceText:           mutate.WriteText,
	EvidenceJSON:           mutate.WriteJSON,
	EvidenceSARIF:          mutate.WriteSARIF,
	EvidenceGitHub:         mutate.WriteGitHub,
	EvidenceGitHubSummary:  mutate.WriteGitHubSummary,
	EvidenceMutationReport: mutate.WriteMutationReport,
}

// evidenceFormatNames are the formats' names, in the order an error lists them.
var evidenceFormatNames = []EvidenceFormat{EvidenceText, EvidenceJSON, EvidenceSARIF, EvidenceGitHub, EvidenceGitHubSummary, EvidenceMutationReport}

// ParseEvidenceFormat is the format called name.
func ParseEvidenceFormat(name string) (EvidenceFormat, error) {
	f := EvidenceFormat(name)
	if _, ok := evidenceWriters[f]; ok {
		return f, nil
	}
	names := make([]string, len(evidenceFormatNames))
	for i, n := range evidenceFormatNames {
		names[i] = string(n)
	}
	return "", fmt.Errorf("unknown evidence format %q: want one of %s", name, strings.Join(names, ", "))
}

// WriteEvidence renders rep to w in format f.
func WriteEvidence(w io.Writer, f EvidenceFormat, rep *EvidenceReport) error {
	write, ok := evidenceWriters[f]
	if !ok {
		_, err := ParseEvidenceFormat(string(f))
		return err
	}
	return write(w, rep)
}
