package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// TestFixFailingTestAction: on a test function (the cursor in it, or a
// diagnostic on it) the code actions offer "Fix this failing test", whose
// command creates a task that reproduces that test by ID first; outside a
// test function nothing is offered. Run in the fake editor on a test that
// passes, the task ends not_reproducible without a model request.
func TestFixFailingTestAction(t *testing.T) {
	model := modeltest.New(modeltest.Options{})
	t.Cleanup(model.Close)
	e, ctx := setup(t, "boundary.txtar", agentBackend(editAgent{files: map[string]string{"price/price.go": boundaryFix}}))
	useModel(t, e.Dir, model.URL, "")
	if err := e.Open(ctx, "price/price_test.go"); err != nil {
		t.Fatal(err)
	}
	at := func(line uint32) lsp.Range {
		return lsp.Range{Start: lsp.Position{Line: line}, End: lsp.Position{Line: line}}
	}
	acts, err := e.CodeActions(ctx, "price/price_test.go", at(6), nil)
	if err != nil {
		t.Fatal(err)
	}
	act := find(acts, command.TitleFixFailingTest)
	if act == nil || act.Command == nil || act.Kind != lsp.KindRefactor {
		t.Fatalf("no fix-failing-test action in a test function: %q", titles(acts))
	}
	var args command.TaskCreateArgs
	if err := json.Unmarshal(act.Command.Arguments[0], &args); err != nil {
		t.Fatal(err)
	}
	if args.Reproduce != "go test ./price -run '^TestDiscount$'" || !args.Run || args.Goal != "" {
		t.Fatalf("the action's arguments %+v", args)
	}
	if acts, _ := e.CodeActions(ctx, "price/price_test.go", at(2), nil); find(acts, command.TitleFixFailingTest) != nil {
		t.Errorf("offered on an import line: %q", titles(acts))
	}
	diag := lsp.Diagnostic{Range: at(6), Message: "--- FAIL: TestDiscount", Source: "go test"}
	acts, err = e.CodeActions(ctx, "price/price_test.go", at(0), []lsp.Diagnostic{diag})
	if err != nil {
		t.Fatal(err)
	}
	if q := find(acts, command.TitleFixFailingTest); q == nil || q.Kind != lsp.KindQuickFix || len(q.Diagnostics) != 1 {
		t.Fatalf("with a failing test's diagnostic: %+v", q)
	}

	var res command.TaskResult
	if err := e.Execute(ctx, command.New("", command.TaskCreate, args), &res); err != nil {
		t.Fatal(err)
	}
	end := awaitEnded(t, ctx, e, res.ID)
	if end.Status != "not_reproducible" || !strings.Contains(end.Summary, "not reproducible") || !strings.Contains(end.Reason, "passed on the base") {
		t.Fatalf("the end: %+v, want not_reproducible", end)
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("%d model requests before the reproduction ended the task", n)
	}
	bad := command.TaskCreateArgs{Reproduce: "make test"}
	if err := e.Execute(ctx, command.New("", command.TaskCreate, bad), &res); err == nil || !strings.Contains(err.Error(), "not a test command") {
		t.Errorf("a command bcode cannot map: %v", err)
	}
}
