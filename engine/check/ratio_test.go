package check_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/check/labelled"
	"github.com/bcode-dev/bcode/internal/testenv"
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
		if c.Python && !testenv.HaveSystemPytest() {
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
				rep, err := check.Run(ctx, check.Options{Scanner: testScanner(), Repo: dir, Base: base, Head: head, Runner: host.New(), NoEvidence: true})
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

// BenchmarkGateAgainstPlainRunsLarger is the same measurement on generated
// repositories whose suites take seconds, not milliseconds: a Go module of
// eight packages and a Python project of ten test files, each test busy
// for a few milliseconds; the change fixes one function and adds its test.
//
//	go test ./engine/check -run '^$' -bench GateAgainstPlainRunsLarger -benchtime 1x
func BenchmarkGateAgainstPlainRunsLarger(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("go is not on PATH")
	}
	for _, lang := range []string{"go", "python"} {
		if lang == "python" && !testenv.HaveSystemPytest() {
			continue
		}
		b.Run(lang, func(b *testing.B) {
			ctx := context.Background()
			var gate, plain time.Duration
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				base, head := generatedRepo(b, dir, lang)
				b.StartTimer()
				t0 := time.Now()
				rep, err := check.Run(ctx, check.Options{Scanner: testScanner(), Repo: dir, Base: base, Head: head, Runner: host.New(), NoEvidence: true, Progress: stepLog{b, t0}})
				gate += time.Since(t0)
				b.StopTimer()
				if err != nil || rep == nil {
					b.Fatalf("check: %v", err)
				}
				b.Logf("%s: %s, timings %v", lang, rep.Verdict, rep.Timings)
				for _, rev := range []string{base, head} {
					snap := filepath.Join(b.TempDir(), "snap")
					if out, err := exec.Command("git", "-C", dir, "worktree", "add", "-q", "--detach", snap, rev).CombinedOutput(); err != nil {
						b.Fatalf("git worktree: %v: %s", err, out)
					}
					t0 := time.Now()
					plainRun(b, snap, lang == "python")
					plain += time.Since(t0)
				}
			}
			b.ReportMetric(gate.Seconds()/float64(b.N), "gate-s")
			b.ReportMetric(plain.Seconds()/float64(b.N), "plain-s")
			b.ReportMetric(gate.Seconds()/plain.Seconds(), "ratio")
		})
	}
}

// generatedRepo writes and commits a base and a head: many busy tests, one
// bug, one fix with its test.
func generatedRepo(b *testing.B, dir, lang string) (base, head string) {
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	write := func(p, content string) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	const units, tests = 8, 12
	if lang == "go" {
		write("go.mod", "module example.com/big\n\ngo 1.26\n")
		for u := range units {
			pkg := fmt.Sprintf("p%d", u)
			write(pkg+"/code.go", "package "+pkg+"\n\nfunc Busy(n int) int {\n\ts := 0\n\tfor i := 0; i < n; i++ {\n\t\ts += i % 7\n\t}\n\treturn s\n}\n\nfunc Abs(x int) int { return x }\n")
			var tb strings.Builder
			fmt.Fprintf(&tb, "package %s\n\nimport \"testing\"\n", pkg)
			for i := range tests {
				fmt.Fprintf(&tb, "\nfunc TestBusy%d(t *testing.T) {\n\tif Busy(3000000) < 0 {\n\t\tt.Fatal()\n\t}\n}\n", i)
			}
			write(pkg+"/code_test.go", tb.String())
		}
	} else {
		for u := range units {
			write(fmt.Sprintf("pkg/m%d.py", u), "def busy(n):\n    return sum(i % 7 for i in range(n))\n\ndef absval(x):\n    return x\n")
			var tb strings.Builder
			fmt.Fprintf(&tb, "from pkg import m%d as m\n", u)
			for i := range tests {
				fmt.Fprintf(&tb, "\ndef test_busy_%d():\n    assert m.busy(20000) >= 0\n", i)
			}
			write(fmt.Sprintf("tests/test_m%d.py", u), tb.String())
		}
		write("pkg/__init__.py", "")
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	if lang == "go" {
		write("p0/code.go", "package p0\n\nfunc Busy(n int) int {\n\ts := 0\n\tfor i := 0; i < n; i++ {\n\t\ts += i % 7\n\t}\n\treturn s\n}\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n")
		f, _ := os.ReadFile(filepath.Join(dir, "p0/code_test.go"))
		write("p0/code_test.go", string(f)+"\nfunc TestAbsNegative(t *testing.T) {\n\tif Abs(-2) != 2 {\n\t\tt.Fatal(Abs(-2))\n\t}\n}\n")
	} else {
		write("pkg/m0.py", "def busy(n):\n    return sum(i % 7 for i in range(n))\n\ndef absval(x):\n    return -x if x < 0 else x\n")
		f, _ := os.ReadFile(filepath.Join(dir, "tests/test_m0.py"))
		write("tests/test_m0.py", string(f)+"\ndef test_abs_negative():\n    assert m.absval(-2) == 2\n")
	}
	git("add", "-A")
	git("commit", "-q", "-m", "head")
	return "HEAD~1", "HEAD"
}

// stepLog logs the gate's steps with the time since it started.
type stepLog struct {
	b     *testing.B
	start time.Time
}

func (l stepLog) Step(format string, args ...any) {
	l.b.Logf("%6.2fs "+format, append([]any{time.Since(l.start).Seconds()}, args...)...)
}
