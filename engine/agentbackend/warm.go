package agentbackend

import (
	"context"
	"errors"
	"sync"

	"github.com/bcode-dev/bcode/sandbox/docker"
)

// The gate's build cache is warmed beside the agent's turns, not before
// them: StartAttempt starts the warm-up (startWarm) and starts the agent's
// container at once; the gate's sandbox (repoSandbox.Open) waits for it
// (awaitWarm) before its first command, so the gate still runs over a warm
// seed. Within a process one warm-up per seed and base runs at a time and
// every caller shares it; across processes WarmSeed's lock file does the
// same.

// warmRun is one warm-up in flight.
type warmRun struct {
	done   chan struct{}
	err    error // set before done closes
	cancel context.CancelFunc
}

type warmKey struct{ seed, base string }

var (
	warmMu  sync.Mutex
	warming = map[warmKey]*warmRun{}
)

// startWarm returns the warm-up of base into seed that is in flight, or
// starts one under ctx. It does not wait.
func startWarm(ctx context.Context, tmpl docker.Config, repo, base, seed string) *warmRun {
	return startFlight(ctx, warmKey{seed, base}, func(ctx context.Context) error {
		return WarmSeed(ctx, tmpl, repo, base, seed)
	})
}

// startFlight returns key's warm-up in flight, or starts warm under ctx.
func startFlight(ctx context.Context, key warmKey, warm func(context.Context) error) *warmRun {
	warmMu.Lock()
	defer warmMu.Unlock()
	if r := warming[key]; r != nil {
		return r
	}
	wctx, cancel := context.WithCancel(ctx)
	r := &warmRun{done: make(chan struct{}), cancel: cancel}
	warming[key] = r
	go func() {
		err := warm(wctx)
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

// awaitWarm waits for the warm-up of base into seed, joining the one in
// flight or starting it. A warm-up that ended because its starter's
// context did (the attempt that began it stopped) is started again while
// ctx lives.
func awaitWarm(ctx context.Context, tmpl docker.Config, repo, base, seed string) error {
	return awaitFlight(ctx, warmKey{seed, base}, func(ctx context.Context) error {
		return WarmSeed(ctx, tmpl, repo, base, seed)
	})
}

// awaitFlight is awaitWarm for key's warm-up, warm.
func awaitFlight(ctx context.Context, key warmKey, warm func(context.Context) error) error {
	for {
		r := startFlight(ctx, key, warm)
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
