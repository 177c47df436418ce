package agentbackend

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// TestWarmRunsBesideAndTheGateWaits: starting the warm-up returns at once
// (the agent's container is not held behind it) and it runs yielding the
// CPUs; the gate's wait joins the warm-up in flight instead of starting a
// second one, tells it to hurry, and returns only when it has finished.
func TestWarmRunsBesideAndTheGateWaits(t *testing.T) {
	key := warmKey{t.TempDir(), "base1"}
	release := make(chan struct{})
	var calls atomic.Int32
	urgentSeen := make(chan (<-chan struct{}), 1)
	warm := func(ctx context.Context, urgent <-chan struct{}) error {
		calls.Add(1)
		urgentSeen <- urgent
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	started := time.Now()
	r := startFlight(context.Background(), key, warm)
	if time.Since(started) > time.Second {
		t.Fatal("startFlight waited for the warm-up")
	}
	urgent := <-urgentSeen
	select {
	case <-urgent:
		t.Fatal("the warm-up was told to hurry before anyone waited for it")
	default:
	}
	gate := make(chan error, 1)
	go func() { gate <- awaitFlight(context.Background(), key, warm) }()
	select {
	case err := <-gate:
		t.Fatalf("the gate went on before the warm-up finished: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	select {
	case <-urgent:
	default:
		t.Fatal("the gate waits but the warm-up still runs at its low CPU weight")
	}
	close(release)
	if err := <-gate; err != nil {
		t.Fatal(err)
	}
	<-r.done
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d warm-ups ran; the gate must join the one in flight", n)
	}
}

// TestWarmStoppedByItsAttemptIsRedoneForTheGate: when the attempt that
// started the warm-up stops it (its session closed), a gate still waiting
// with a live context starts it again rather than taking the cancellation
// as the result.
func TestWarmStoppedByItsAttemptIsRedoneForTheGate(t *testing.T) {
	key := warmKey{t.TempDir(), "base2"}
	var calls atomic.Int32
	warm := func(ctx context.Context, _ <-chan struct{}) error {
		if calls.Add(1) == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	r := startFlight(context.Background(), key, warm)
	gate := make(chan error, 1)
	go func() { gate <- awaitFlight(context.Background(), key, warm) }()
	time.Sleep(100 * time.Millisecond)
	r.stop()
	if err := r.failure(); err != nil {
		t.Errorf("a stopped warm-up reports %v; a cancellation is no failure", err)
	}
	select {
	case err := <-gate:
		if err != nil {
			t.Fatalf("gate: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gate never finished")
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d warm-ups ran, want 2 (the stopped one and the gate's)", n)
	}
}

// TestWarmFailureReachesTheGate: a warm-up that fails for a reason of its
// own (the base does not build) is the gate's answer, not retried.
func TestWarmFailureReachesTheGate(t *testing.T) {
	key := warmKey{t.TempDir(), "base3"}
	broken := errors.New("the base does not build")
	var calls atomic.Int32
	warm := func(context.Context, <-chan struct{}) error { calls.Add(1); return broken }
	if err := awaitFlight(context.Background(), key, warm); !errors.Is(err, broken) {
		t.Fatalf("gate: %v, want %v", err, broken)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d warm-ups ran, want 1", n)
	}
}

// TestSeedLockSerialisesWarmUps: the seed's lock file admits one holder;
// another waits until it is released, or gives up when its context ends.
// (flock locks belong to open files, so two opens in one process contend
// as two processes do.)
func TestSeedLockSerialisesWarmUps(t *testing.T) {
	seed := t.TempDir()
	unlock, err := lockSeed(context.Background(), seed)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*seedLockPoll)
	defer cancel()
	if _, err := lockSeed(ctx, seed); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second holder got the lock while the first held it: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := lockSeed(context.Background(), seed)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(2 * seedLockPoll)
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never got the lock after it was released")
	}
}

// fakeRunner records the commands it ran.
type fakeRunner struct {
	sandbox.ScopedRunner
	ran atomic.Int32
}

func (f *fakeRunner) Run(context.Context, sandbox.Command) (sandbox.Result, error) {
	f.ran.Add(1)
	return sandbox.Result{}, nil
}

// TestGateRunnerWaitsForTheWarmUpBeforeItsFirstCommand: the gate's runner
// holds its first command until the warm-up the agent's attempt started
// has finished (the gate builds over a warm seed), and later commands do
// not wait again.
func TestGateRunnerWaitsForTheWarmUpBeforeItsFirstCommand(t *testing.T) {
	release := make(chan struct{})
	var warmed atomic.Bool
	sw := &seedWarm{seed: t.TempDir(), base: "base4", fn: func(ctx context.Context, _ <-chan struct{}) error {
		select {
		case <-release:
			warmed.Store(true)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	agentRun := sw.start(context.Background()) // the agent's StartAttempt
	defer agentRun.stop()

	fake := &fakeRunner{}
	gate := &warmedRunner{ScopedRunner: fake, seed: sw}
	ran := make(chan error, 1)
	go func() {
		_, err := gate.Run(context.Background(), sandbox.Command{Args: []string{"go", "test", "./..."}})
		ran <- err
	}()
	select {
	case <-ran:
		t.Fatal("the gate's first command ran before the warm-up finished")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if !warmed.Load() || fake.ran.Load() != 1 {
		t.Fatalf("warmed %v, commands run %d", warmed.Load(), fake.ran.Load())
	}
	if _, err := gate.Run(context.Background(), sandbox.Command{Args: []string{"go", "vet"}}); err != nil || fake.ran.Load() != 2 {
		t.Fatalf("second command: %v, %d run", err, fake.ran.Load())
	}

}
