package command

import (
	"context"
	"encoding/json"

	"github.com/bcode-dev/bcode/server/lsp"
)

// entry binds one command name to its method.
type entry struct {
	name string
	call func(ctx context.Context, s Interface, arg json.RawMessage) (any, error)
}

// bind makes the entry for a method taking A, decoding A strictly.
func bind[A, R any](name string, m func(Interface, context.Context, A) (R, error)) entry {
	return entry{name: name, call: func(ctx context.Context, s Interface, raw json.RawMessage) (any, error) {
		var a A
		if err := decode(name, raw, &a); err != nil {
			return nil, err
		}
		return m(s, ctx, a)
	}}
}

var table = []entry{
	bind(TaskCreate, Interface.TaskCreate),
	bind(TaskRun, Interface.TaskRun),
	bind(TaskResume, Interface.TaskResume),
	bind(TaskCancel, Interface.TaskCancel),
	bind(TaskAccept, Interface.TaskAccept),
	bind(TaskReject, Interface.TaskReject),
	bind(PackPreview, Interface.PackPreview),
	bind(EvidenceRun, Interface.EvidenceRun),
	bind(MutantDiff, Interface.MutantDiff),
	bind(TaskDiff, Interface.TaskDiff),
	bind(TestOpen, Interface.TestOpen),
	bind(TestRun, Interface.TestRun),
	bind(MutantActions, Interface.MutantActions),
	bind(TaskApproveModule, Interface.TaskApproveModule),
}

// Dispatch runs the command name with args on s. A wrong name, a wrong
// number of arguments or an argument of the wrong shape is an
// InvalidParams error saying what was expected.
func Dispatch(ctx context.Context, s Interface, name string, args []json.RawMessage) (any, error) {
	for _, e := range table {
		if e.name != name {
			continue
		}
		var arg json.RawMessage
		switch len(args) {
		case 0:
			arg = json.RawMessage("{}")
		case 1:
			arg = args[0]
		default:
			return nil, lsp.Errorf(lsp.CodeInvalidParams, "%s takes one argument object, got %d arguments", name, len(args))
		}
		return e.call(ctx, s, arg)
	}
	return nil, lsp.Errorf(lsp.CodeInvalidParams, "unknown command %q (bcode-ls serves %v)", name, Names())
}

func decode(name string, raw json.RawMessage, v any) error {
	return Decode(name, raw, v)
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}

// New is the lsp.Command that runs name with arg.
func New(title, name string, arg any) lsp.Command {
	// The argument types above are plain strings, numbers and ranges,
	// which always encode.
	b, _ := json.Marshal(arg)
	return lsp.Command{Title: title, Command: name, Arguments: []json.RawMessage{b}}
}
