package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// TestPolyglotSurvivorActions: a save of a .rs, .py or .js file publishes its
// surviving boundary mutant, and its quick fixes are the Go ones but for
// "Ignore this mutant" (only the Go engine reads the directive): the
// diff, a test task, "Go to covering test" at the test's declaration in
// its file, and "Run the covering tests", which runs it and passes.
func TestPolyglotSurvivorActions(t *testing.T) {
	for _, c := range []struct {
		name, fixture, file, old, new string
		need                          func(testing.TB) string
		testFile                      string
		testLine, testChar            uint32
	}{
		{name: "Rust", fixture: "rsboundary.txtar", file: "src/lib.rs", old: "if n >= 10 {", new: "if n > 10 {",
			need:     func(t testing.TB) string { return testenv.Command(t, "cargo", "apt-get install cargo") },
			testFile: "/tests/discount.rs", testLine: 1, testChar: 3},
		{name: "Python", fixture: "pyboundary.txtar", file: "shop/price.py", old: "if n >= 10:", new: "if n > 10:",
			need:     testenv.SystemPytest,
			testFile: "/tests/test_price.py", testLine: 3, testChar: 4},
		{name: "JavaScript", fixture: "jsboundary.txtar", file: "src/price.js", old: "if (n >= 10) {", new: "if (n > 10) {",
			need:     testenv.Node,
			testFile: "/test/price.test.js", testLine: 5, testChar: 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.need(t)
			e, ctx := setup(t, c.fixture, server.Options{})
			if err := e.Open(ctx, c.file); err != nil {
				t.Fatal(err)
			}
			ds, byID := saveAndAwaitSurvivors(t, ctx, e, c.file, c.old, c.new)
			var boundary *lsp.Diagnostic
			for i, d := range warnings(ds) {
				var data server.MutantData
				if json.Unmarshal(d.Data, &data) == nil && byID[data.ID].Operator == mutate.OpConditionalBoundary {
					boundary = &warnings(ds)[i]
				}
			}
			if boundary == nil || boundary.Range.Start.Line != 2 {
				t.Fatalf("no boundary survivor on line 3 among %+v", warnings(ds))
			}
			as, err := e.CodeActions(ctx, c.file, boundary.Range, []lsp.Diagnostic{*boundary})
			if err != nil {
				t.Fatal(err)
			}
			as = allQuickFixes(t, ctx, e, as)
			var goTo, run *lsp.CodeAction
			for i, a := range as {
				switch {
				case strings.HasPrefix(a.Title, command.TitleIgnoreMutant):
					t.Errorf("%q offered in a %s file, whose engine does not read the directive", a.Title, c.name)
				case strings.HasPrefix(a.Title, command.TitleGoToTest):
					goTo = &as[i]
				case strings.HasPrefix(a.Title, command.TitleRunTests):
					run = &as[i]
				}
			}
			for _, want := range []string{command.TitleShowMutant, command.TitleAddTest} {
				if !hasTitlePrefix(as, want) {
					t.Errorf("no %q among %q", want, titlesOf(as))
				}
			}
			if goTo == nil || run == nil {
				t.Fatalf("no go-to or run action among %q", titlesOf(as))
			}
			var at command.TestOpenArgs
			if err := json.Unmarshal(goTo.Command.Arguments[0], &at); err != nil || !strings.HasSuffix(at.URI, c.testFile) || at.Range == nil ||
				at.Range.Start.Line != c.testLine || at.Range.Start.Character != c.testChar {
				t.Errorf("%q goes to %+v (%v), want %s:%d:%d", goTo.Title, at, err, c.testFile, c.testLine, c.testChar)
			}
			var res command.TestRunResult
			if err := e.Execute(ctx, *run.Command, &res); err != nil {
				t.Fatal(err)
			}
			if !res.Passed || len(res.Tests) == 0 {
				t.Errorf("run result %+v", res)
			}
		})
	}
}

func hasTitlePrefix(as []lsp.CodeAction, prefix string) bool {
	for _, a := range as {
		if strings.HasPrefix(a.Title, prefix) {
			return true
		}
	}
	return false
}
