package docker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
)

// testImage is built once per test binary; it is the same rootfs `bcode
// sandbox build` makes, under a tag of its own.
const testImage = "bcode-sandbox:test"

var (
	engineOnce sync.Once
	engineErr  error
	testEngine *Engine
	imageErr   error
)

// requireDocker returns a connected engine with the test image built, or
// skips (fails under BCODE_REQUIRE_ALL=1) when no engine runs.
func requireDocker(t *testing.T) *Engine {
	t.Helper()
	engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		testEngine, engineErr = Connect(ctx)
		if engineErr != nil {
			return
		}
		bctx, bcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer bcancel()
		_, imageErr = testEngine.BuildImage(bctx, testImage)
	})
	if engineErr != nil {
		testenv.Missing(t, "needs a Docker engine: start dockerd (apt-get install docker.io; dockerd &): "+engineErr.Error())
	}
	if imageErr != nil {
		t.Fatalf("building the test image: %v", imageErr)
	}
	return testEngine
}

// newTestRunner makes a runner over worktree with the test image.
func newTestRunner(t *testing.T, worktree string, mod func(*Config)) *Runner {
	t.Helper()
	e := requireDocker(t)
	cfg := Config{Image: testImage, Worktree: worktree, Labels: map[string]string{"dev.bcode.test": t.Name()}}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.NewRunner(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
