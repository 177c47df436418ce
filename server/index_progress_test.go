package server_test

import (
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// TestPackIndexProgressEnds: the first pack indexes the workspace and
// shows it as a "bcode index" progress that reports packages and ends;
// the next pack, on the warm index, shows none.
func TestPackIndexProgressEnds(t *testing.T) {
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	sel := lsp.Range{Start: lsp.Position{Line: 3}, End: lsp.Position{Line: 8}}
	var sum server.PackSummary
	if err := e.Conn.Call(ctx, server.MethodContextPack, command.PackArgs{URI: e.URI("price/price.go"), Range: &sel}, &sum); err != nil {
		t.Fatal(err)
	}
	indexTokens := func() (begun map[string]bool, reported, ended map[string]string) {
		begun, reported, ended = map[string]bool{}, map[string]string{}, map[string]string{}
		for _, p := range e.ProgressReports() {
			switch {
			case p.Kind == "begin" && p.Title == "bcode index":
				begun[p.Token] = true
			case p.Kind == "report" && begun[p.Token]:
				reported[p.Token] = p.Message
			case p.Kind == "end" && begun[p.Token]:
				ended[p.Token] = p.Message
			}
		}
		return begun, reported, ended
	}
	begun, reported, ended := indexTokens()
	if len(begun) != 1 {
		t.Fatalf("index progress begun %d times: %+v", len(begun), e.ProgressReports())
	}
	for tok := range begun {
		if !strings.Contains(reported[tok], "of") || !strings.HasPrefix(ended[tok], "indexed ") {
			t.Fatalf("index progress %s: last report %q, end %q", tok, reported[tok], ended[tok])
		}
	}
	if err := e.Conn.Call(ctx, server.MethodContextPack, command.PackArgs{URI: e.URI("price/price.go"), Range: &sel}, &sum); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := indexTokens(); len(again) != 1 {
		t.Fatalf("the warm pack showed index progress too: %d begun", len(again))
	}
}
