package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/agentbackend"
)

func init() {
	taskSubcommands["approve-module"] = taskApproveModule
}

// taskApproveModule is `bcode task approve-module ID MOD@VER`: the user's
// answer to a module.approval_needed event. The host fetches a module
// version for a task only when the base's go.sum lists it or the user
// approved it here; the next look (the next turn or attempt) fetches it.
func taskApproveModule(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd("approve-module", "approve-module ID MODULE@VERSION", stderr)
	if !c.parse(args) {
		return 2
	}
	if len(c.args) != 2 {
		return c.usageErr("give one task ID and one MODULE@VERSION")
	}
	id, mod := c.args[0], c.args[1]
	if _, err := agentbackend.ParseModule(mod); err != nil {
		return c.usageErr("%v", err)
	}
	led, err := c.st.openLedger(ctx)
	if err != nil {
		return c.fail("%v", err)
	}
	defer led.Close()
	if _, err := led.Task(ctx, id); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return c.fail("%s", explain(id, err))
		}
		return c.fail("%v", err)
	}
	mv, err := agentbackend.ApproveModule(ctx, led, id, mod)
	if err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintf(stdout, "approved %s@%s for task %s: the host fetches it with your proxy settings at the agent's next turn\n", mv.Path, mv.Version, id)
	return 0
}
