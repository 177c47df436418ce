package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify"
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

// TestRun runs a mutant's covering tests on the workspace as it is (the
// user's own code, as gopls's "run test" does) through the engine, with
// the language's adapter (Go and Python alike), and answers with the
// result.
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := s.beginProgress(ctx, "bcode: running "+strings.Join(m.Tests, ", "), cancel)
	results, err := s.app.RunCoveringTests(ctx, app.CoveringTestsRequest{Dir: root, File: m.File, Tests: m.Tests, Timeout: testRunTimeout})
	if errors.Is(err, app.ErrNotATestName) {
		p.end("could not run: " + err.Error())
		return command.TestRunResult{}, lsp.Errorf(lsp.CodeRequestFailed, "%v", err)
	}
	if err != nil {
		p.end("could not run: " + err.Error())
		return command.TestRunResult{}, lsp.Errorf(lsp.CodeRequestFailed, "running the covering tests: %v", err)
	}
	r, verdict := testRunResult(m.Tests, results)
	p.end(verdict)
	_ = s.client.ShowMessage(context.Background(), lsp.MessageInfo, fmt.Sprintf("bcode: %s: %s", strings.Join(m.Tests, ", "), verdict))
	return r, nil
}

// testRunResult is the answer to bcode.test.run from the tests' results,
// a line per test with the last 8 KiB of what they said, and the verdict
// in a word or three.
func testRunResult(tests []string, results []verify.TestResult) (command.TestRunResult, string) {
	var b strings.Builder
	passed, timedOut := len(results) > 0, false
	for _, res := range results {
		word := "ok"
		switch res.Outcome {
		case verify.Pass:
		case verify.Timeout:
			word, passed, timedOut = string(res.Outcome), false, true
		default:
			word, passed = string(res.Outcome), false
		}
		fmt.Fprintf(&b, "%s\t%s\t(%s)\n", word, res.Test.Name, res.Duration.Round(time.Millisecond))
		if res.Detail != "" {
			b.WriteString(res.Detail)
			if !strings.HasSuffix(res.Detail, "\n") {
				b.WriteString("\n")
			}
		}
	}
	out := b.String()
	if len(out) > 8<<10 {
		out = "…" + out[len(out)-8<<10:]
	}
	r := command.TestRunResult{Tests: tests, Passed: passed, Output: out}
	switch {
	case timedOut:
		return r, fmt.Sprintf("timed out after %s", testRunTimeout)
	case !r.Passed:
		return r, "fail"
	}
	return r, "pass"
}
