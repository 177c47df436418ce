package check_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
)

// BenchmarkGateReusingTheBase measures what the base's stored results
// (verify.BaseResults, in a fresh SQLite ledger per round) save: a first
// attempt's gate, which runs and stores the base, and a later attempt's
// on the same base, which reads it, against the plain head suite (`go
// test -count=1 -vet=off ./...`, `python3 -m pytest -q`), on the
// generated repositories of BenchmarkGateAgainstPlainRunsLarger. It
// starts with bcode's caches as they are (the Go build cache warm after
// the first round) and reports first-s, later-s, head-s and
// later/head; the target is later/head ≤ 1.2.
//
//	go test ./engine/check -run '^$' -bench GateReusingTheBase -benchtime 1x
func BenchmarkGateReusingTheBase(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("go is not on PATH")
	}
	for _, lang := range []string{"go", "python"} {
		if lang == "python" && !testenv.HaveSystemPytest() {
			continue
		}
		b.Run(lang, func(b *testing.B) {
			var first, later, head time.Duration
			for range b.N {
				b.StopTimer()
				f, l, h := reusingRound(b, lang)
				first, later, head = first+f, later+l, head+h
			}
			n := float64(b.N)
			b.ReportMetric(first.Seconds()/n, "first-s")
			b.ReportMetric(later.Seconds()/n, "later-s")
			b.ReportMetric(head.Seconds()/n, "head-s")
			b.ReportMetric(later.Seconds()/head.Seconds(), "later/head")
		})
	}
}

// reusingRound is one round: a generated repository, a fresh ledger, the
// first and a later attempt's gate on the change, and the plain head run.
func reusingRound(b *testing.B, lang string) (first, later, head time.Duration) {
	ctx := context.Background()
	dir := b.TempDir()
	base, headRev := generatedRepo(b, dir, lang)
	led, err := ledger.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer led.Close()
	gate := func() time.Duration {
		b.StartTimer()
		t0 := time.Now()
		rep, err := check.Run(ctx, check.Options{Scanner: testScanner(), Repo: dir, Base: base, Head: headRev, Runner: host.New(), Recorder: led, NoEvidence: true})
		d := time.Since(t0)
		b.StopTimer()
		if err != nil || rep == nil {
			b.Fatalf("check: %v", err)
		}
		b.Logf("%s: %s, base reused %+v, timings %v", lang, rep.Verdict, rep.BaseReused, rep.Timings)
		return d
	}
	first, later = gate(), gate()
	snap := filepath.Join(b.TempDir(), "snap")
	if out, err := exec.Command("git", "-C", dir, "worktree", "add", "-q", "--detach", snap, headRev).CombinedOutput(); err != nil {
		b.Fatalf("git worktree: %v: %s", err, out)
	}
	t0 := time.Now()
	plainRun(b, snap, lang == "python")
	return first, later, time.Since(t0)
}
