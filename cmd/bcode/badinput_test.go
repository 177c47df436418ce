package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testenv"
)

// TestBadInput runs the real bcode binary against inputs a user (or an
// agent) will sooner or later hand it: a directory that is not a git
// checkout, a revision that does not exist, a base branch that was deleted,
// a binary file in the diff, a 10,000-file diff, a file that is not UTF-8
// and a state directory that cannot be created. Every run must end in a
// clear message and a non-zero exit or a proper verdict, never a panic, and
// the ledger must pass SQLite's integrity check afterwards.
//
// The unusable state directory is a path below a regular file: tests run as
// root here, and chmod 000 does not stop root, but mkdir under a file fails
// with ENOTDIR for everyone.
//
// bcode-ls requests with the same inputs are tested with the language
// server (server/), where an LSP error replaces the exit code.
func TestBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bcode and runs it about thirty times; skipped with -short")
	}
	testenv.Git(t)
	testenv.Go(t)
	ctx := context.Background()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bcode")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building bcode: %v\n%s", err, out)
	}

	notGit := filepath.Join(tmp, "not-git")
	writeBadInputFile(t, filepath.Join(notGit, "main.go"), "package main\n")
	blocker := filepath.Join(tmp, "a-file")
	writeBadInputFile(t, blocker, "not a directory\n")
	badState := filepath.Join(blocker, "state")

	clean := badInputRepo(t, filepath.Join(tmp, "clean"))
	binary := badInputRepo(t, filepath.Join(tmp, "binary"))
	// A boundary no test pins, next to the binary file: evidence must still
	// find and judge the mutants of a.go.
	writeBadInputFile(t, filepath.Join(binary, "a.go"), "package m\n\nfunc Add(a, b int) int {\n\tif a > 100 {\n\t\treturn 0\n\t}\n\treturn a + b\n}\n")
	writeBadInputFile(t, filepath.Join(binary, "logo.png"), "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff\xfe")
	many := badInputRepo(t, filepath.Join(tmp, "many"))
	for i := range 10000 {
		writeBadInputFile(t, filepath.Join(many, "data", fmt.Sprintf("d%02d", i/500), fmt.Sprintf("f%05d.txt", i)), fmt.Sprintf("row %d\n", i))
	}
	notUTF8 := badInputRepo(t, filepath.Join(tmp, "not-utf8"))
	// Latin-1 in a Go comment (the compiler rejects it) and in a text file.
	writeBadInputFile(t, filepath.Join(notUTF8, "a.go"), "package m\n\n// Caf\xe9 \xff\xfe\nfunc Add(a, b int) int { return a + b }\n")
	writeBadInputFile(t, filepath.Join(notUTF8, "notes.txt"), "na\xefve r\xe9sum\xe9\n")

	state := filepath.Join(tmp, "state")
	ledgerPath := filepath.Join(state, "ledger.db")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if l, err := ledger.Open(ctx, ledgerPath); err != nil {
		t.Fatal(err)
	} else {
		l.Close()
	}

	// Messages the cases assert on, in the words a user reads.
	const (
		notARepo    = `(?i)not a git repository`
		badRevision = `bad revision "nosuchrev"`
		deletedBase = `bad revision "deleted-base"`
		stateDir    = `state dir .*cannot be created.*not a directory`
		verdict     = `(?m)^(NOT_VERIFIED|GREEN|FAILED|TAMPERED|ERROR|VERIFIED) `
	)
	type badCase struct {
		name  string
		args  []string
		exits []int  // acceptable exit codes
		want  string // regexp the combined output must match
	}
	var cases []badCase
	repoCases := func(cmd []string, extra ...string) {
		args := func(repo string, more ...string) []string {
			return append(append(append(slices.Clone(cmd), "--repo", repo), extra...), more...)
		}
		cases = append(cases,
			badCase{"non-git directory", args(notGit), []int{1, 2}, notARepo},
			badCase{"bad revision", args(clean, "--base", "nosuchrev"), []int{1, 2}, badRevision},
			badCase{"deleted base branch", args(clean, "--base", "deleted-base"), []int{1, 2}, deletedBase},
		)
	}

	cmdCheck := []string{"check", "-q", "--no-evidence", "--state", state}
	repoCases(cmdCheck)
	cases = append(cases,
		badCase{"binary file in the diff", append(slices.Clone(cmdCheck), "--repo", binary), []int{1}, verdict + `.*\(2 files`},
		badCase{"10,000-file diff", append(slices.Clone(cmdCheck), "--repo", many), []int{1}, verdict + `.*\(10000 files`},
		badCase{"not UTF-8", append(slices.Clone(cmdCheck), "--repo", notUTF8), []int{1}, `(?s)^FAILED .*build_error`},
		badCase{"unusable state dir", []string{"check", "-q", "--no-evidence", "--repo", clean, "--state", badState}, []int{2}, stateDir},
	)
	for i := range cases {
		cases[i].name = "check/" + cases[i].name
	}
	n := len(cases)

	repoCases([]string{"evidence", "-q", "--workers", "2"})
	cases = append(cases,
		badCase{"binary file in the diff", []string{"evidence", "-q", "--workers", "2", "--repo", binary}, []int{1}, `a\.go:4:5\s+conditional_boundary`},
		badCase{"10,000-file diff", []string{"evidence", "-q", "--repo", many}, []int{0}, `No mutable code on the changed lines`},
		badCase{"not UTF-8", []string{"evidence", "-q", "--repo", notUTF8}, []int{2}, `a\.go:3:\d+: illegal UTF-8 encoding`},
	)
	for i := n; i < len(cases); i++ {
		cases[i].name = "evidence/" + cases[i].name
	}
	n = len(cases)

	cmdPack := []string{"pack", "--goal", "make Add commutative", "--budget", "2000", "--tokenizer", "http://127.0.0.1:1", "--state", state}
	cases = append(cases,
		badCase{"non-git directory", append(slices.Clone(cmdPack), "--repo", notGit), []int{2}, notARepo},
		badCase{"bad selection revision", append(slices.Clone(cmdPack), "--repo", clean, "--selection", "nosuch.go:1-2"), []int{2}, `nosuch\.go`},
		badCase{"binary file in the tree", append(slices.Clone(cmdPack), "--repo", binary), []int{0}, `pack: \d+ of 2000 tokens`},
		badCase{"10,000-file tree", append(slices.Clone(cmdPack), "--repo", many), []int{0}, `pack: \d+ of 2000 tokens`},
		badCase{"not UTF-8", append(slices.Clone(cmdPack), "--repo", notUTF8), []int{0}, `pack: \d+ of 2000 tokens`},
		badCase{"not-UTF-8 selection", append(slices.Clone(cmdPack), "--repo", notUTF8, "--selection", "notes.txt:1"), []int{0, 2}, `Selection: notes\.txt:1-1`},
		// pack works without the ledger and says so.
		badCase{"unusable state dir", []string{"pack", "--goal", "x", "--tokenizer", "http://127.0.0.1:1", "--repo", clean, "--state", badState}, []int{0}, `ledger unavailable \(` + stateDir},
	)
	for i := n; i < len(cases); i++ {
		cases[i].name = "pack/" + cases[i].name
	}
	n = len(cases)

	if out, _ := exec.Command(bin, "task", "-h").CombinedOutput(); bytes.Contains(out, []byte("create")) {
		repoCases([]string{"task", "create", "make Add commutative", "--state", state})
		noTask := `no task "nosuchid"`
		cases = append(cases,
			badCase{"create with a binary file", []string{"task", "create", "goal", "--state", state, "--repo", binary}, []int{0}, `^[a-z0-9]+\s*$`},
			badCase{"create in a 10,000-file tree", []string{"task", "create", "goal", "--state", state, "--repo", many}, []int{0}, `^[a-z0-9]+\s*$`},
			badCase{"create with a non-UTF-8 goal", []string{"task", "create", "caf\xe9 \xff", "--state", state, "--repo", clean}, []int{0, 1, 2}, `(?i)^[a-z0-9]+\s*$|utf-8`},
			badCase{"create, unusable state dir", []string{"task", "create", "goal", "--repo", clean, "--state", badState}, []int{1, 2}, stateDir},
			badCase{"status of a missing task", []string{"task", "status", "nosuchid", "--repo", clean, "--state", state}, []int{1, 2}, noTask},
			badCase{"status, unusable state dir", []string{"task", "status", "--repo", clean, "--state", badState}, []int{1, 2}, stateDir},
			badCase{"status, non-git directory", []string{"task", "status", "--repo", notGit, "--state", state}, []int{1, 2}, notARepo},
			badCase{"run a missing task", []string{"task", "run", "nosuchid", "--repo", clean, "--state", state}, []int{1, 2}, noTask},
			badCase{"approve a module for a missing task", []string{"task", "approve-module", "nosuchid", "golang.org/x/text@v0.14.0", "--repo", clean, "--state", state}, []int{1, 2}, noTask},
			badCase{"approve a module version that is not one", []string{"task", "approve-module", "nosuchid", "exfil.example/x?d=1@latest", "--repo", clean, "--state", state}, []int{2}, `not a valid module version`},
			badCase{"run, unusable state dir", []string{"task", "run", "nosuchid", "--repo", clean, "--state", badState}, []int{1, 2}, stateDir},
		)
		for i := n; i < len(cases); i++ {
			if !strings.HasPrefix(cases[i].name, "task/") {
				cases[i].name = "task/" + cases[i].name
			}
		}
	} else {
		t.Log("bcode has no task command yet: task cases not run")
	}

	// runner: the long-running worker over the (shared) ledger.
	runnerState := filepath.Join(tmp, "runner-state")
	cases = append(cases,
		badCase{"runner/nothing runnable", []string{"runner", "--once", "--state", runnerState}, []int{3}, `no runnable task`},
		badCase{"runner/unusable state dir", []string{"runner", "--once", "--state", badState}, []int{1, 2}, stateDir},
		badCase{"runner/a ledger URL that is not Postgres", []string{"runner", "--once", "--state", runnerState, "--ledger", "mysql://u@h/db"}, []int{1, 2}, `is not a postgres:// URL`},
		badCase{"runner/an unreachable Postgres", []string{"runner", "--once", "--state", runnerState, "--ledger", "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2"}, []int{1}, `(?s)cannot be reached.*set --ledger or BCODE_LEDGER`},
		badCase{"runner/a bad --sessions", []string{"runner", "--once", "--state", runnerState, "--sessions", "http://gpu"}, []int{2}, `give ENDPOINT=N`},
	)

	// secrets scan-history: a history with a credential in it. The value is
	// made at run time so this file never puts one into bcode's own history.
	leaky := badInputRepo(t, filepath.Join(tmp, "leaky"))
	secret := fmt.Sprintf("%x", time.Now().UnixNano()) + "q7Zk2Lp9Xw4Rt"
	writeBadInputFile(t, filepath.Join(leaky, "deploy.env"), "SERVICE_API_"+"KEY=\""+secret+"\"\n")
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "deploy settings"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = leaky
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	n = len(cases)
	cases = append(cases,
		badCase{"non-git directory", []string{"secrets", "scan-history", "--repo", notGit}, []int{2}, `(?i)not a git repository`},
		badCase{"missing directory", []string{"secrets", "scan-history", "--repo", filepath.Join(tmp, "nowhere")}, []int{2}, `is not a directory`},
		badCase{"unknown subcommand", []string{"secrets", "scan-everything"}, []int{2}, `unknown subcommand "scan-everything"`},
		badCase{"bad baseline", []string{"secrets", "scan-history", "--repo", clean, "--baseline", blocker}, []int{2}, `want FULLCOMMIT:PATH:RULE:LINE`},
		badCase{"clean history", []string{"secrets", "scan-history", "--repo", clean}, []int{0}, `no secrets in the history`},
		badCase{"a secret in history", []string{"secrets", "scan-history", "--repo", leaky}, []int{1}, `(?s)deploy\.env:1: generic-api-key .*1 secret\(s\) in the history`},
	)
	for i := n; i < len(cases); i++ {
		cases[i].name = "secrets/" + cases[i].name
	}

	panicked := regexp.MustCompile(`panic:|goroutine \d+ \[`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a bound on hangs, not a speed check: a 10,000-file diff took over 90 s beside two package test runs
			defer cancel()
			cmd := exec.CommandContext(cctx, bin, tc.args...)
			cmd.Env = append(os.Environ(), "BCODE_STATE="+state)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			text := out.String()
			t.Logf("bcode %q: exit %d\n%s", tc.args, code, badInputTail(text))
			if cctx.Err() != nil {
				t.Fatalf("still running after 5 minutes: %v\n%s", err, badInputTail(text))
			}
			if panicked.MatchString(text) {
				t.Fatalf("bcode %q panicked:\n%s", tc.args, badInputTail(text))
			}
			if !slices.Contains(tc.exits, code) {
				t.Errorf("exit %d, want one of %v\n%s", code, tc.exits, badInputTail(text))
			}
			if strings.Contains(text, secret) {
				t.Errorf("the secret itself was printed:\n%s", badInputTail(text))
			}
			if !regexp.MustCompile(tc.want).MatchString(text) {
				t.Errorf("output does not match %q:\n%s", tc.want, badInputTail(text))
			}
			l, err := ledger.Open(ctx, ledgerPath)
			if err != nil {
				t.Fatalf("ledger after the run: %v", err)
			}
			defer l.Close()
			if err := l.IntegrityCheck(ctx); err != nil {
				t.Fatalf("ledger damaged: %v", err)
			}
		})
	}
}

// badInputRepo makes a tiny Go module with one test, committed on main, and
// a branch that was deleted after it had a commit of its own.
func badInputRepo(t *testing.T, dir string) string {
	t.Helper()
	writeBadInputFile(t, filepath.Join(dir, "go.mod"), "module m\n\ngo 1.22\n")
	writeBadInputFile(t, filepath.Join(dir, "a.go"), "package m\n\nfunc Add(a, b int) int { return a + b }\n")
	writeBadInputFile(t, filepath.Join(dir, "a_test.go"), "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"1+2\")\n\t}\n}\n")
	g := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=bcode test", "-c", "user.email=test@bcode.invalid", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	g("init", "-q")
	g("add", "-A")
	g("commit", "-qm", "base")
	g("checkout", "-qb", "deleted-base")
	writeBadInputFile(t, filepath.Join(dir, "b.go"), "package m\n")
	g("add", "-A")
	g("commit", "-qm", "on a branch about to be deleted")
	g("checkout", "-q", "main")
	g("branch", "-qD", "deleted-base")
	return dir
}

func writeBadInputFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// badInputTail keeps a failure message readable when a run printed a whole report.
func badInputTail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}
