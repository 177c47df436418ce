package agentbackend

import (
	"context"
	"strconv"

	"github.com/bcode-dev/bcode/sandbox/docker"
)

// ReapStale removes every container of task taskID that a holder with an
// older fence than fence left: the agent container and the commands of a
// runner that was killed (its deferred removal never ran, and the agent
// may still be running a command in its worktree). The current holder's
// containers are left alone. It returns how many it removed.
//
// sandbox/docker's Reap matches labels exactly, so each older fence is
// asked for by value; fences count claims of one task, so there are few.
func ReapStale(ctx context.Context, e *docker.Engine, taskID string, fence int64) (int, error) {
	total := 0
	for f := int64(1); f < fence; f++ {
		n, err := e.Reap(ctx, map[string]string{LabelTask: taskID, LabelFence: strconv.FormatInt(f, 10)})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
