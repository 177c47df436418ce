package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/bcode-dev/bcode/engine"
)

// TestForTaskRequiresTheScanner: a run without the process's secret
// scanner does not start: there is no scanner of its own to fall back to.
func TestForTaskRequiresTheScanner(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, 0)
	tk := createTask(t, e, newRepo(t, nil), engine.Budgets{})
	if r, err := ForTask(ctx, e, tk.ID, Options{}); r != nil || !errors.Is(err, ErrNoScanner) {
		t.Errorf("ForTask without a scanner: %v, %v; want ErrNoScanner", r, err)
	}
}
