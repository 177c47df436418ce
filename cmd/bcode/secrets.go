package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

func init() {
	register(command{
		name:    "secrets",
		summary: "scan a repository's whole git history for secrets (scan-history)",
		run:     cmdSecrets,
	})
}

// Exit codes of `bcode secrets`: CI fails on a finding (1) and on anything
// that kept the scan from reading the whole history (2).
const (
	secretsClean    = 0
	secretsFound    = 1
	secretsError    = 2
	shortCommitHash = 12
)

var secretsGroup = commandGroup{
	name:  "bcode secrets",
	about: "  scan-history [--repo DIR] [--baseline FILE]   scan every commit reachable from any ref for secrets",
	subs:  map[string]subcommand{"scan-history": cmdSecretsScanHistory},
}

func cmdSecrets(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	return secretsGroup.run(ctx, eng, args, stdout, stderr)
}

func cmdSecretsScanHistory(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode secrets scan-history [--repo DIR] [--baseline FILE]", stdout, stderr)
	fs.about = `Scans every line added by every commit reachable from any ref with gitleaks' default rules.
The repository's own .gitleaks.toml, .gitleaksignore and baselines are not read: the history
being judged does not get to allowlist itself. A --baseline file, kept outside what is judged, accepts
findings already reviewed (fake test credentials): each entry names one commit, so it can never hide a new one.

Exit status: 0 no secret, 1 secrets found, 2 error.`
	repoDir := fs.String("repo", ".", "the git repository `DIR` whose history (every ref) is scanned")
	baselineFile := fs.String("baseline", "", "a `FILE` of reviewed findings to accept, one COMMIT:PATH:RULE:LINE a line (# comments)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		errorf(stderr, "bcode secrets scan-history", format, a...)
		return secretsError
	}
	var baseline map[string]bool
	if *baselineFile != "" {
		var err error
		if baseline, err = readBaseline(*baselineFile); err != nil {
			return fail("%v", err)
		}
	}
	start := time.Now()
	findings, err := eng.ScanSecretHistory(ctx, *repoDir)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, app.ErrSecretRules) {
			return fail("interrupted")
		}
		return fail("%v", err)
	}
	// Only the redacted form is printed: a report of a leak must not leak.
	var found, known int
	matched := map[string]bool{}
	for _, f := range findings {
		commit := f.Commit
		if len(commit) > shortCommitHash {
			commit = commit[:shortCommitHash]
		}
		line := shown.Line(fmt.Sprintf("%s %s:%d: %s (%s): %s", commit, f.Path, f.Line, f.RuleID, f.Description, f.Redacted))
		if fp := f.Fingerprint(); baseline[fp] {
			matched[fp] = true
			known++
			fmt.Fprintf(stderr, "accepted by %s: %s\n", *baselineFile, line)
			continue
		}
		found++
		fmt.Fprintln(stdout, line)
	}
	for fp := range baseline {
		if !matched[fp] {
			fmt.Fprintf(stderr, "bcode secrets scan-history: baseline entry %s matches no finding (drop it)\n", fp)
		}
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	if found > 0 {
		fmt.Fprintf(stderr, "bcode secrets scan-history: %d secret(s) in the history of %s (%s); rotate each one, then remove it from history\n", found, *repoDir, elapsed)
		fmt.Fprintf(stderr, "(a fake credential in a test: build it at run time instead, or, once reviewed, add its COMMIT:PATH:RULE:LINE to the baseline)\n")
		return secretsFound
	}
	fmt.Fprintf(stderr, "bcode secrets scan-history: no secrets in the history of %s (%d accepted by the baseline; %s)\n", *repoDir, known, elapsed)
	return secretsClean
}

// readBaseline reads reviewed fingerprints, one a line; blank lines and
// lines starting with # are comments.
func readBaseline(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the baseline: %w", err)
	}
	out := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		if len(parts) < 4 || len(parts[0]) < 40 {
			return nil, fmt.Errorf("%s:%d: want FULLCOMMIT:PATH:RULE:LINE, got %q", path, i+1, line)
		}
		if _, err := strconv.Atoi(parts[len(parts)-1]); err != nil {
			return nil, fmt.Errorf("%s:%d: the last field of %q must be a line number", path, i+1, line)
		}
		out[line] = true
	}
	return out, nil
}
