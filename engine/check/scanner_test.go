package check_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// testScanner is the tests' one secret scanner, built once as a process
// builds its own (check.Run requires one).
var testScanner = sync.OnceValue(func() *secrets.Scanner {
	s, err := secrets.NewScanner()
	if err != nil {
		panic("the secret rules do not compile: " + err.Error())
	}
	return s
})

// TestRunRequiresAScanner: without the process's scanner the gate refuses
// to judge (the secret check is part of every verdict) and says what to
// pass, rather than building one of its own.
func TestRunRequiresAScanner(t *testing.T) {
	rep, err := check.Run(context.Background(), check.Options{Repo: t.TempDir(), Base: "HEAD~1", Head: "HEAD", Runner: host.New()})
	if rep != nil || !errors.Is(err, check.ErrNoScanner) {
		t.Fatalf("Run without a scanner: %+v, %v; want no report and ErrNoScanner", rep, err)
	}
}
