package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// The answers to engine/agentbackend's module.approval_needed event: the
// host fetches a module version for a task only when the base's go.sum has
// it or the user says yes, here or with `bcode task approve-module`.
const (
	approveAction = "Approve"
	notNowAction  = "Not now"
)

// TaskApproveModule is bcode.task.approveModule.
func (s *Server) TaskApproveModule(ctx context.Context, a command.TaskModuleArgs) (command.TaskResult, error) {
	switch {
	case a.ID == "":
		return command.TaskResult{}, command.Required(command.TaskApproveModule, "id", "the task's ID, as bcode/tasks lists it")
	case a.Module == "":
		return command.TaskResult{}, command.Required(command.TaskApproveModule, "module", "MODULE@VERSION, as the module.approval_needed event names it")
	}
	mod, err := s.app.ApproveModule(ctx, a.ID, a.Module)
	if err != nil {
		return command.TaskResult{}, taskError(err)
	}
	t, err := s.app.Task(ctx, a.ID)
	if err != nil {
		return command.TaskResult{}, taskError(err)
	}
	return command.TaskResult{ID: t.ID, Status: string(t.Status), Message: "approved " + mod + ": the host fetches it with your proxy settings at the agent's next turn"}, nil
}

// askModuleApproval asks the user about one module.approval_needed event
// (window/showMessageRequest) and records a yes. Each (task, module) is
// asked once per server.
func (s *Server) askModuleApproval(t *engine.Task, e engine.Event) {
	var d struct {
		Module string `json:"module"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.Module == "" {
		return
	}
	key := t.ID + " " + d.Module
	s.mu.Lock()
	if s.asked == nil {
		s.asked = map[string]bool{}
	}
	if s.asked[key] {
		s.mu.Unlock()
		return
	}
	s.asked[key] = true
	s.mu.Unlock()
	s.goBackground("asking about module "+d.Module, func(ctx context.Context) {
		msg := fmt.Sprintf("bcode: task %s needs module %s, which its base does not use. Fetch it through your Go proxy? (Nothing is fetched for the agent without your yes; `bcode task approve-module %s %s` says yes too.)", t.ID, d.Module, t.ID, d.Module)
		pick, err := s.client.ShowMessageRequest(ctx, lsp.MessageWarning, msg, []string{approveAction, notNowAction})
		if err != nil || pick != approveAction {
			return
		}
		if _, err := s.TaskApproveModule(ctx, command.TaskModuleArgs{ID: t.ID, Module: d.Module}); err != nil {
			_ = s.client.ShowMessage(context.Background(), lsp.MessageError, "bcode: approving "+d.Module+": "+err.Error())
			return
		}
		_ = s.client.ShowMessage(context.Background(), lsp.MessageInfo, fmt.Sprintf("bcode: approved %s for task %s", d.Module, t.ID))
	})
}
