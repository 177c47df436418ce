package python

import (
	"context"
	"sync"

	"github.com/bcode-dev/bcode/sandbox"
)

// choosers holds one Adapter per configured interpreter and checkout for
// the process, so every run outside a gate (bcode evidence, bcode-ls's
// saves) shares the probe answers of the others.
var choosers sync.Map

// Chooser is the choice of the Python that runs pytest, as the gate's
// runs make it (Adapter.Interpreter: configured, which is gate.python,
// else the snapshot's .venv, checkout's .venv, python3, /usr/bin/python3;
// the first that imports pytest), for callers outside a gate: mutation
// evidence runs its mutants under it. checkout "" is none (an agent's
// worktree is hostile, and a container does not see the path).
func Chooser(configured, checkout string) func(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	key := configured + "\x00" + checkout
	a, ok := choosers.Load(key)
	if !ok {
		fresh := New(configured)
		fresh.Checkout = checkout
		a, _ = choosers.LoadOrStore(key, fresh)
	}
	return a.(*Adapter).Interpreter
}
