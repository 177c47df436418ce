package ledgertest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// testOracle: a task's reproduction is stored as given, read back byte
// for byte, replaced until pinned and never after, fenced by a lease when
// one is given, and refused when malformed; a task without one reads nil.
func testOracle(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	if o, err := s.Oracle(ctx, tk.ID); o != nil || err != nil {
		t.Fatalf("Oracle of a task without one: %+v, %v", o, err)
	}
	sel := []engine.OracleTest{{Language: "go", Package: "./calc", Name: "^TestAbs$"}}
	req := &engine.Oracle{Command: "go test ./calc -run ^TestAbs$", Selectors: sel}
	ok(t, s.SetOracle(ctx, nil, tk.ID, req))
	if got := must[*engine.Oracle](t)(s.Oracle(ctx, tk.ID)); !reflect.DeepEqual(got, req) || got.Pinned() {
		t.Fatalf("Oracle: %+v, want %+v unpinned", got, req)
	}
	lease := acquire(t, s, tk.ID, holderA, time.Minute)
	at := c.Now().UTC()
	pinned := &engine.Oracle{Command: req.Command, Selectors: sel,
		Tests:    []engine.OracleTest{{Language: "go", Package: "./calc", File: "calc/calc_test.go", Name: "TestAbs"}},
		Files:    []engine.OracleFile{{Path: "calc/calc_test.go", SHA256: strings.Repeat("ab", 32)}},
		PinnedAt: &at}
	stale := lease
	stale.Fence--
	if err := s.SetOracle(ctx, &stale, tk.ID, pinned); !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("SetOracle under a stale fence: %v, want ErrFenced", err)
	}
	ok(t, s.SetOracle(ctx, &lease, tk.ID, pinned))
	got := must[*engine.Oracle](t)(s.Oracle(ctx, tk.ID))
	if !got.Pinned() || !reflect.DeepEqual(got.Tests, pinned.Tests) || !reflect.DeepEqual(got.Files, pinned.Files) || !got.PinnedAt.Equal(at) {
		t.Fatalf("pinned Oracle: %+v, want %+v", got, pinned)
	}
	if err := s.SetOracle(ctx, &lease, tk.ID, req); !errors.Is(err, ledger.ErrOraclePinned) {
		t.Fatalf("replacing a pinned oracle: %v, want ErrOraclePinned", err)
	}
	for name, bad := range map[string]*engine.Oracle{
		"nil":               nil,
		"no command":        {Selectors: sel},
		"no selector":       {Command: "go test"},
		"a test no name":    {Command: "go test", Selectors: sel, Tests: []engine.OracleTest{{Language: "go", Package: "."}}},
		"a file no hash":    {Command: "go test", Selectors: sel, Files: []engine.OracleFile{{Path: "a_test.go"}}},
		"a selector no pkg": {Command: "go test", Selectors: []engine.OracleTest{{Language: "go", Name: "TestX"}}},
	} {
		other := newTask(t, s, "/r", "g2")
		if err := s.SetOracle(ctx, nil, other.ID, bad); !errors.Is(err, engine.ErrBadOracle) {
			t.Errorf("SetOracle %s: %v, want ErrBadOracle", name, err)
		}
	}
	if err := s.SetOracle(ctx, nil, "nosuchtask", req); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("SetOracle of a missing task: %v, want ErrNotFound", err)
	}
}

// testCreateWithOracle: a task created with what to reproduce has its
// oracle from the same write (no runner can claim it in between), and a
// malformed one leaves no task behind.
func testCreateWithOracle(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := open1(t, b)
	req := &engine.Oracle{Command: "go test ./calc -run ^TestAbs$", Selectors: []engine.OracleTest{{Language: "go", Package: "./calc", Name: "^TestAbs$"}}}
	tk := &engine.Task{Repo: "/r", Goal: "reproduce", Base: "b", Reproduce: req}
	ok(t, s.CreateTask(ctx, tk))
	if got := must[*engine.Oracle](t)(s.Oracle(ctx, tk.ID)); !reflect.DeepEqual(got, req) {
		t.Fatalf("Oracle after CreateTask: %+v, want %+v", got, req)
	}
	bad := &engine.Task{ID: "t-bad-oracle", Repo: "/r", Goal: "reproduce", Base: "b", Reproduce: &engine.Oracle{Command: "go test"}}
	if err := s.CreateTask(ctx, bad); !errors.Is(err, engine.ErrBadOracle) {
		t.Fatalf("CreateTask with a malformed oracle: %v, want ErrBadOracle", err)
	}
	if _, err := s.Task(ctx, bad.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a task whose oracle was refused: %v, want ErrNotFound", err)
	}
}
