package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/app"
)

func init() {
	taskGroup.subs["approve-module"] = taskApproveModule
}

// taskApproveModule is bcode task approve-module TASK MODULE@VERSION: the user's
// answer to a module.approval_needed event. The host fetches a module
// version for a task only when the base's go.sum lists it or the user
// approved it here; the next look (the next turn or attempt) fetches it.
func taskApproveModule(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "approve-module TASK MODULE@VERSION", stdout, stderr)
	if code, ok := c.parse(args); !ok {
		return code
	}
	if len(c.args) != 2 {
		return c.usageErr("give one task ID and one MODULE@VERSION")
	}
	id, mod := c.args[0], c.args[1]
	if _, err := agentbackend.ParseModule(mod); err != nil {
		return c.usageErr("%v", err)
	}
	if err := c.st.use(eng); err != nil {
		return c.fail("%v", err)
	}
	mv, err := eng.ApproveModule(ctx, id, mod)
	if errors.Is(err, engine.ErrNotFound) {
		return c.fail("%s", explain(id, err))
	}
	if err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintf(stdout, "approved %s for task %s: the host fetches it with your proxy settings at the agent's next turn\n", mv, id)
	return 0
}
