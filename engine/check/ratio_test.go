package check_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/check/labelled"
	"github.com/bcode-dev/bcode/sandbox/host"
)

// ratioCases are the labelled changes the time benchmark measures: a fix
// and a broken change in each language. BCODE_RATIO_CASES overrides them
// (comma-separated case names).
var ratioCases = []string{"go-correct-fix", "go-breaks-other-package", "py-correct-fix", "py-breaks-other-test"}

// BenchmarkGateAgainstPlainRuns measures the gate (no mutation evidence)
// against what a person runs to compare two commits: the whole suite once
// on the base and once on the head, one after the other (`go test
// -count=1 -vet=off ./...`, `python3 -m pytest -q -p no:cacheprovider`).
// It reports gate-s, plain-s (base plus head) and the ratio per case:
//
//	go test ./engine/check -run '^$' -bench GateAgainstPlainRuns -benchtime 1x
func BenchmarkGateAgainstPlainRuns(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("go is not on PATH")
	}
	names := ratioCases
	if s := os.Getenv("BCODE_RATIO_CASES"); s != "" {
		names = strings.Split(s, ",")
	}
	all, err := labelled.Load(suiteDir)
	if err != nil {
		b.Fatal(err)
	}
	byName := map[string]labelled.Case{}
	for _, c := range all {
		byName[c.Name] = c
	}
	for _, name := range names {
		c, ok := byName[name]
		if !ok {
			b.Fatalf("no labelled case %s", name)
		}
		if c.Python && !pytestAvailable() {
			b.Logf("%s: skipped, /usr/bin/python3 -m pytest is unavailable", name)
			continue
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var gate, plain time.Duration
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				if err := c.Build(ctx, dir); err != nil {
					b.Fatal(err)
				}
				base, head := c.Revisions()
				b.StartTimer()
				t0 := time.Now()
				rep, err := check.Run(ctx, check.Options{Repo: dir, Base: base, Head: head, Runner: host.New(), NoEvidence: true})
				gate += time.Since(t0)
				b.StopTimer()
				if err != nil || rep == nil {
					b.Fatalf("check: %v", err)
				}
				b.Logf("%s: %s, timings %v", name, rep.Verdict, rep.Timings)
				for _, rev := range []string{base, head} {
					snap := filepath.Join(b.TempDir(), "snap")
					if out, err := exec.Command("git", "-C", dir, "worktree", "add", "-q", "--detach", snap, rev).CombinedOutput(); err != nil {
						b.Fatalf("git worktree: %v: %s", err, out)
					}
					t0 := time.Now()
					plainRun(b, snap, c.Python)
					plain += time.Since(t0)
				}
			}
			b.ReportMetric(gate.Seconds()/float64(b.N), "gate-s")
			b.ReportMetric(plain.Seconds()/float64(b.N), "plain-s")
			b.ReportMetric(gate.Seconds()/plain.Seconds(), "ratio")
		})
	}
}

// plainRun runs the whole suite of dir the way a person would; failures
// are expected (a broken change) and ignored, only the time counts.
func plainRun(b *testing.B, dir string, python bool) {
	var cmd *exec.Cmd
	if python {
		cmd = exec.Command("/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider")
	} else {
		cmd = exec.Command("go", "test", "-count=1", "-vet=off", "./...")
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
	}
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			b.Fatalf("plain run in %s: %v: %s", dir, err, out)
		}
	}
}
