package command

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/server/lsp"
)

// recorder implements Interface by recording what it was called with.
type recorder struct{ got any }

func (r *recorder) TaskCreate(_ context.Context, a TaskCreateArgs) (TaskResult, error) {
	r.got = a
	return TaskResult{ID: "t1", Status: "queued"}, nil
}
func (r *recorder) TaskRun(_ context.Context, a TaskIDArgs) (TaskResult, error) {
	r.got = a
	return TaskResult{ID: a.ID}, nil
}
func (r *recorder) TaskResume(_ context.Context, a TaskIDArgs) (TaskResult, error) {
	r.got = a
	return TaskResult{ID: a.ID}, nil
}
func (r *recorder) TaskCancel(_ context.Context, a TaskIDArgs) (TaskResult, error) {
	r.got = a
	return TaskResult{ID: a.ID}, nil
}
func (r *recorder) TaskAccept(_ context.Context, a TaskAcceptArgs) (TaskResult, error) {
	r.got = a
	return TaskResult{ID: a.ID}, nil
}
func (r *recorder) TaskReject(_ context.Context, a TaskIDArgs) (TaskResult, error) {
	r.got = a
	return TaskResult{ID: a.ID}, nil
}
func (r *recorder) PackPreview(_ context.Context, a PackArgs) (DocumentResult, error) {
	r.got = a
	return DocumentResult{URI: "bcode-pack:/1/x.md"}, nil
}
func (r *recorder) EvidenceRun(_ context.Context, a EvidenceRunArgs) (EvidenceRunResult, error) {
	r.got = a
	return EvidenceRunResult{Run: 1}, nil
}
func (r *recorder) MutantDiff(_ context.Context, a MutantArgs) (DocumentResult, error) {
	r.got = a
	return DocumentResult{}, nil
}

func (r *recorder) TaskDiff(_ context.Context, a TaskDiffArgs) (TaskDiffResult, error) {
	r.got = a
	return TaskDiffResult{ID: a.ID}, nil
}

func (r *recorder) TestOpen(_ context.Context, a TestOpenArgs) (DocumentResult, error) {
	r.got = a
	return DocumentResult{URI: a.URI}, nil
}

func (r *recorder) TaskApproveModule(_ context.Context, a TaskModuleArgs) (TaskResult, error) {
	r.got = a
	return TaskResult{ID: a.ID}, nil
}

func (r *recorder) MutantActions(_ context.Context, a MutantActionsArgs) (LineMutants, error) {
	r.got = a
	return LineMutants{}, nil
}

func (r *recorder) TestRun(_ context.Context, a MutantArgs) (TestRunResult, error) {
	r.got = a
	return TestRunResult{}, nil
}

// TestEveryCommandRoundTrips: each command built with New reaches its
// method with the same typed argument.
func TestEveryCommandRoundTrips(t *testing.T) {
	r := lsp.Range{Start: lsp.Position{Line: 1}, End: lsp.Position{Line: 2, Character: 3}}
	args := map[string]any{
		TaskCreate:        TaskCreateArgs{Goal: "g", URI: "file:///x.go", Range: &r, MutantID: "m1", Criteria: []string{"c"}},
		TaskRun:           TaskIDArgs{ID: "t1"},
		TaskResume:        TaskIDArgs{ID: "t2"},
		TaskCancel:        TaskIDArgs{ID: "t3"},
		TaskAccept:        TaskAcceptArgs{ID: "t4", Force: true},
		TaskReject:        TaskIDArgs{ID: "t5"},
		PackPreview:       PackArgs{URI: "file:///x.go", Range: &r, Budget: 500},
		EvidenceRun:       EvidenceRunArgs{Base: "main"},
		MutantDiff:        MutantArgs{ID: "m2"},
		TaskDiff:          TaskDiffArgs{ID: "t6", Path: "a/b.go"},
		TestOpen:          TestOpenArgs{URI: "file:///x_test.go", Range: &r},
		TestRun:           MutantArgs{ID: "m3"},
		MutantActions:     MutantActionsArgs{URI: "file:///x.go", Line: 4},
		TaskApproveModule: TaskModuleArgs{ID: "t7", Module: "golang.org/x/text@v0.14.0"},
	}
	if len(args) != len(Names()) {
		t.Fatalf("the test covers %d commands, the contract has %d", len(args), len(Names()))
	}
	for _, name := range Names() {
		rec := &recorder{}
		c := New("title", name, args[name])
		if _, err := Dispatch(context.Background(), rec, c.Command, c.Arguments); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := json.Marshal(args[name])
		got, _ := json.Marshal(rec.got)
		if string(got) != string(want) {
			t.Errorf("%s: method got %s, want %s", name, got, want)
		}
	}
}

func TestDispatchErrors(t *testing.T) {
	cases := []struct {
		name string
		cmd  string
		args []json.RawMessage
		says string
	}{
		{"unknown", "bcode.nope", nil, "unknown command"},
		{"wrong type", TaskRun, []json.RawMessage{json.RawMessage(`{"id": 3}`)}, "id must be a string, got a number"},
		{"unknown field", TaskRun, []json.RawMessage{json.RawMessage(`{"id": "t", "extra": 1}`)}, "unknown field"},
		{"two arguments", TaskRun, []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{}`)}, "one argument"},
		{"not an object", EvidenceRun, []json.RawMessage{json.RawMessage(`"main"`)}, "params must be an object with the fields base, got a string"},
	}
	for _, c := range cases {
		_, err := Dispatch(context.Background(), &recorder{}, c.cmd, c.args)
		var le *lsp.Error
		if !errors.As(err, &le) || le.Code != lsp.CodeInvalidParams || !strings.Contains(le.Message, c.says) {
			t.Errorf("%s: got %v, want InvalidParams saying %q", c.name, err, c.says)
		}
	}
	// No arguments at all is an empty argument object.
	rec := &recorder{}
	if _, err := Dispatch(context.Background(), rec, EvidenceRun, nil); err != nil || rec.got != (EvidenceRunArgs{}) {
		t.Errorf("no arguments: %v %+v", err, rec.got)
	}
}
