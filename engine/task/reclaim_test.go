package task_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/task"
)

// TestReclaimByTheSameOwnerIsRecorded: a holder that claims its own task
// again (fence 1 to 2, as a runner's worker does after its lease went
// stale during a ledger outage) records task.recovered with the lease it
// replaced, like any takeover.
func TestReclaimByTheSameOwnerIsRecorded(t *testing.T) {
	repo, e := setup(t)
	ctx := context.Background()
	tk, err := e.Create(ctx, task.CreateInput{Repo: repo, Goal: "fix Add"})
	if err != nil {
		t.Fatal(err)
	}
	me := ledger.LocalHolder("")
	first, _, err := e.Claim(ctx, tk.ID, me)
	if err != nil {
		t.Fatal(err)
	}
	second, rec, err := e.Claim(ctx, tk.ID, me)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Ledger.Release(ctx, second)
	if second.Fence != first.Fence+1 {
		t.Fatalf("re-claim at fence %d after %d", second.Fence, first.Fence)
	}
	if !rec.SameOwner || rec.PreviousOwner != me.Owner || rec.PreviousFence != first.Fence || rec.LastHeartbeat.IsZero() {
		t.Errorf("recovery %+v, want the same owner's fence %d", rec, first.Fence)
	}
	evs, err := e.Ledger.Events(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		if ev.Kind == task.EventRecovered && ev.Fence == second.Fence {
			var d task.Recovery
			json.Unmarshal(ev.Data, &d)
			found = d.SameOwner && d.PreviousFence == first.Fence && d.PreviousOwner == me.Owner
		}
	}
	if !found {
		t.Errorf("no task.recovered at fence %d naming fence %d of the same owner", second.Fence, first.Fence)
	}
}
