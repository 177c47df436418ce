package server

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// TestOpen shows a covering test's declaration.
func (s *Server) TestOpen(ctx context.Context, a command.TestOpenArgs) (command.DocumentResult, error) {
	if a.URI == "" {
		return command.DocumentResult{}, command.Required(command.TestOpen, "uri", "the test file's URI, as the code action gave it")
	}
	if _, _, err := s.fileOf(a.URI); err != nil {
		return command.DocumentResult{}, err
	}
	var r lsp.Range
	if a.Range != nil {
		r = *a.Range
	}
	shown, err := s.client.ShowLocation(ctx, a.URI, r)
	if err != nil {
		return command.DocumentResult{}, lsp.Errorf(lsp.CodeRequestFailed, "showing %s: %v", a.URI, err)
	}
	return command.DocumentResult{URI: a.URI, Shown: shown}, nil
}

// testRunTimeout bounds one bcode.test.run.
const testRunTimeout = 5 * time.Minute

// testNameRE is what a covering test's name may be: a Go identifier and
// its subtests. Names come from the evidence report, but they end up in a
// -run pattern, so anything else is refused.
var testNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(/[^\s]*)?$`)

// TestRun runs a mutant's covering tests on the workspace as it is (the
// user's own code, as gopls's "run test" does) and answers with the result.
func (s *Server) TestRun(ctx context.Context, a command.MutantArgs) (command.TestRunResult, error) {
	if a.ID == "" {
		return command.TestRunResult{}, command.Required(command.TestRun, "id", "a mutant ID from a bcode diagnostic's data")
	}
	m, ok := s.mutant(a.ID)
	if !ok {
		return command.TestRunResult{}, lsp.Errorf(lsp.CodeInvalidParams, "no mutant %q in the last evidence report: run evidence again (bcode.evidence.run)", a.ID)
	}
	if len(m.Tests) == 0 {
		return command.TestRunResult{}, lsp.Errorf(lsp.CodeInvalidParams, "no test covers mutant %s: write one (bcode: Add a test for this boundary)", a.ID)
	}
	root, err := s.workspace()
	if err != nil {
		return command.TestRunResult{}, err
	}
	pattern, err := runPattern(m.Tests)
	if err != nil {
		return command.TestRunResult{}, err
	}
	pkg := "./" + path.Dir(m.File)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := s.beginProgress(ctx, "bcode: running "+strings.Join(m.Tests, ", "), cancel)
	res, err := s.runner.Run(ctx, sandbox.Command{
		Dir:         root,
		Args:        []string{"go", "test", "-count=1", "-run", pattern, pkg},
		Timeout:     testRunTimeout,
		OutputLimit: 1 << 20,
	})
	if err != nil {
		p.end("could not run: " + err.Error())
		return command.TestRunResult{}, lsp.Errorf(lsp.CodeRequestFailed, "running go test: %v", err)
	}
	r, verdict := testRunResult(m.Tests, res)
	p.end(verdict)
	_ = s.client.ShowMessage(context.Background(), lsp.MessageInfo, fmt.Sprintf("bcode: %s: %s", strings.Join(m.Tests, ", "), verdict))
	return r, nil
}

// runPattern is go test's -run pattern for the covering tests: their
// top-level names, each once (a subtest runs with its parent).
func runPattern(tests []string) (string, error) {
	var tops []string
	seen := map[string]bool{}
	for _, t := range tests {
		if !testNameRE.MatchString(t) {
			return "", lsp.Errorf(lsp.CodeRequestFailed, "covering test %q is not a Go test name", t)
		}
		top, _, _ := strings.Cut(t, "/")
		if !seen[top] {
			seen[top] = true
			tops = append(tops, regexp.QuoteMeta(top))
		}
	}
	return "^(" + strings.Join(tops, "|") + ")$", nil
}

// testRunResult is the answer to bcode.test.run from go test's result,
// with the last 8 KiB of its output, and the verdict in a word or three.
func testRunResult(tests []string, res sandbox.Result) (command.TestRunResult, string) {
	out := string(res.Stdout) + string(res.Stderr)
	if len(out) > 8<<10 {
		out = "…" + out[len(out)-8<<10:]
	}
	r := command.TestRunResult{Tests: tests, Passed: res.ExitCode == 0 && !res.TimedOut, Output: out}
	switch {
	case res.TimedOut:
		return r, fmt.Sprintf("timed out after %s", testRunTimeout)
	case !r.Passed:
		return r, "fail"
	}
	return r, "pass"
}
