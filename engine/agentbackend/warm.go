package agentbackend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// The gate's build cache is warmed beside the agent's turns, not before
// them: StartAttempt starts the warm-up (seedWarm.start) and the agent's
// container at once; the gate's runner (warmedRunner) waits for it before
// its first command, so the gate still runs over a warm seed. Within a process one warm-up per seed and base runs at a time and
// every caller shares it; across processes WarmSeed's lock file does the
// same.

// warmRun is one warm-up in flight.
type warmRun struct {
	done   chan struct{}
	err    error // set before done closes
	cancel context.CancelFunc
	// urgent closes when someone waits for the warm-up: it then runs at
	// the default CPU weight instead of yielding.
	urgent     chan struct{}
	urgentOnce sync.Once
}

// hurry tells the warm-up that someone waits for it.
func (r *warmRun) hurry() { r.urgentOnce.Do(func() { close(r.urgent) }) }

type warmKey struct{ seed, base string }

var (
	warmMu  sync.Mutex
	warming = map[warmKey]*warmRun{}
)

// seedWarm is the warm-up of one base into one seed.
type seedWarm struct {
	tmpl             docker.Config
	repo, base, seed string
	fn               func(ctx context.Context, urgent <-chan struct{}) error // nil: warmSeed (tests replace it)
}

func (w *seedWarm) key() warmKey { return warmKey{w.seed, w.base} }

func (w *seedWarm) warm(ctx context.Context, urgent <-chan struct{}) error {
	if w.fn != nil {
		return w.fn(ctx, urgent)
	}
	return warmSeed(ctx, w.tmpl, w.repo, w.base, w.seed, urgent)
}

// start returns the warm-up in flight, or starts one under ctx. It does
// not wait.
func (w *seedWarm) start(ctx context.Context) *warmRun { return startFlight(ctx, w.key(), w.warm) }

// await waits for the warm-up (awaitFlight).
func (w *seedWarm) await(ctx context.Context) error { return awaitFlight(ctx, w.key(), w.warm) }

// warmedRunner is the gate's runner: its first command waits for the
// seed's warm-up, so the gate's builds find the base compiled. Warming is
// best effort (a base that does not build must not stop the check of the
// attempt that is to fix it): a failed warm-up leaves a cold cache, and
// the commands compile what they need.
type warmedRunner struct {
	sandbox.ScopedRunner
	seed *seedWarm
	once sync.Once
}

func (r *warmedRunner) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	var err error
	r.once.Do(func() { err = r.seed.await(ctx) })
	if err != nil && ctx.Err() != nil {
		return sandbox.Result{}, ctx.Err()
	}
	return r.ScopedRunner.Run(ctx, c)
}

// Identity is the container's (docker.Runner.Identity): the seed only
// makes builds faster, never changes what they give.
func (r *warmedRunner) Identity(ctx context.Context) (string, error) {
	return innerIdentity(ctx, r.ScopedRunner)
}

// innerIdentity is the Identity of the runner a wrapper runs commands
// with, for the key of the base's reused results (verify.RunnerIdentity).
func innerIdentity(ctx context.Context, r sandbox.Runner) (string, error) {
	ri, ok := r.(interface {
		Identity(context.Context) (string, error)
	})
	if !ok {
		return "", fmt.Errorf("agentbackend: the %s runner names no identity", r.Name())
	}
	return ri.Identity(ctx)
}

// startFlight returns key's warm-up in flight, or starts warm under ctx.
func startFlight(ctx context.Context, key warmKey, warm func(ctx context.Context, urgent <-chan struct{}) error) *warmRun {
	warmMu.Lock()
	defer warmMu.Unlock()
	if r := warming[key]; r != nil {
		return r
	}
	wctx, cancel := context.WithCancel(ctx)
	r := &warmRun{done: make(chan struct{}), cancel: cancel, urgent: make(chan struct{})}
	warming[key] = r
	go func() {
		err := warm(wctx, r.urgent)
		cancel()
		warmMu.Lock()
		delete(warming, key)
		warmMu.Unlock()
		r.err = err
		close(r.done)
	}()
	return r
}

// stop cancels the warm-up and waits until its container is gone. It may
// be called more than once.
func (r *warmRun) stop() {
	r.cancel()
	<-r.done
}

// failure is the warm-up's error once it has ended, unless the end was a
// cancellation; nil while it runs.
func (r *warmRun) failure() error {
	select {
	case <-r.done:
	default:
		return nil
	}
	if errors.Is(r.err, context.Canceled) {
		return nil
	}
	return r.err
}

// awaitFlight waits for key's warm-up, joining the one in flight or
// starting warm. A warm-up that ended because its starter's context did
// (the attempt that began it stopped) is started again while ctx lives.
func awaitFlight(ctx context.Context, key warmKey, warm func(ctx context.Context, urgent <-chan struct{}) error) error {
	for {
		r := startFlight(ctx, key, warm)
		r.hurry()
		select {
		case <-r.done:
			if ctx.Err() == nil && (errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded)) {
				continue
			}
			return r.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
