package check_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/sandbox/scratch"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
)

// dirRecorder is a runner that records the directories its test commands
// ran in.
type dirRecorder struct {
	sandbox.Runner
	mu   sync.Mutex
	dirs []string
}

func (d *dirRecorder) Run(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	if strings.Contains(strings.Join(cmd.Args, " "), " test ") {
		d.mu.Lock()
		d.dirs = append(d.dirs, cmd.Dir)
		d.mu.Unlock()
	}
	return d.Runner.Run(ctx, cmd)
}

// taken returns the recorded directories and forgets them.
func (d *dirRecorder) taken() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	dirs := d.dirs
	d.dirs = nil
	return dirs
}

// TestBaseResultsKeyedWithoutTheSnapshotPath: the gate's snapshots are at
// the repository's stable paths when free and at fresh ones when other
// gates hold them; the base's key does not depend on which, so a later
// change at fresh paths reuses what a check at the stable paths stored,
// and judges as a fresh run does.
func TestBaseResultsKeyedWithoutTheSnapshotPath(t *testing.T) {
	r, base := baseCacheRepo(t)
	led := openLedger(t)
	counter := &baseRunCounter{Runner: &host.Runner{Extra: goEnv}, base: base}
	runner := &dirRecorder{Runner: counter}
	root, err := scratch.Root()
	if err != nil {
		t.Fatal(err)
	}
	stable := filepath.Join(root, "stable") + string(filepath.Separator)
	first := checkOn(t, r, "HEAD~1", "main", check.Options{Runner: runner, Recorder: led})
	if first.Verdict != verify.Verified || counter.runs() != 1 {
		t.Fatalf("first check: %s, %d base runs", first.Verdict, counter.runs())
	}
	for _, d := range runner.taken() {
		if !strings.HasPrefix(d, stable) {
			t.Errorf("the first check ran in %s, want a stable path below %s", d, stable)
		}
	}

	// Other gates on the repository hold every stable slot of both sides.
	ctx := context.Background()
	repo, err := git.Open(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	others, err := gitchange.Load(ctx, repo, "main~1", "other")
	if err != nil {
		t.Fatal(err)
	}
	defer others.Workspace.Close()
	for range 4 {
		for _, side := range []verify.Side{verify.BaseSide, verify.HeadSide} {
			if _, err := others.Workspace.Materialize(ctx, side, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	later := checkOn(t, r, "main~1", "other", check.Options{Runner: runner, Recorder: led})
	if counter.runs() != 1 || later.BaseReused == nil {
		t.Fatalf("a later change at fresh paths: %d base runs, reused %+v: want the stored run", counter.runs(), later.BaseReused)
	}
	dirs := runner.taken()
	if len(dirs) == 0 {
		t.Fatal("the later check ran no test")
	}
	for _, d := range dirs {
		if strings.HasPrefix(d, stable) || !strings.Contains(d, string(filepath.Separator)+"bcode-snap-") {
			t.Errorf("with every slot held the later check ran in %s, want a fresh bcode-snap-* path", d)
		}
	}
	fresh := checkOn(t, r, "main~1", "other", check.Options{Runner: runner, Recorder: led, NoCache: true})
	sameJudgement(t, later, fresh)
}
