package task_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	bgit "github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/tamper"
)

// The red-team suite for the host-side git of a task: each attack is what
// an agent can do from its terminal in the worktree (so, here, what a
// turn writes into it), first run through plain git to show it is armed
// (the marker program runs, or git fails or hangs), then through bcode's
// checkpoint, status, accept and reject, which must hold: no marker, the
// checkpoint commits, what was left out or would land is reported, and
// reject always works.

// plantAgent runs plant in the worktree in its one turn, as the agent's
// terminal would.
type plantAgent struct {
	plant func(t *testing.T, wt string)
	t     *testing.T
}

func (a plantAgent) StartAttempt(ctx context.Context, in runner.AttemptInput) (runner.Session, error) {
	return &plantSession{a: a, dir: in.Worktree}, nil
}

type plantSession struct {
	a   plantAgent
	dir string
}

func (s *plantSession) Turn(ctx context.Context) (runner.TurnResult, error) {
	// An ordinary edit next to the attack, so the checkpoint has work to keep
	// (one of its own per worktree: a second task on the accepted first must
	// change something too, or its attempt is a no_change one and the
	// attack is planted again in the same worktree).
	write(s.a.t, s.dir, "calc.go", "package calc\n\n// "+filepath.Base(s.dir)+"\nfunc Add(a, b int) int {\n\treturn a + b\n}\n")
	s.a.plant(s.a.t, s.dir)
	return runner.TurnResult{Summary: "planted", Done: true, TokensUsed: 10}, nil
}
func (s *plantSession) Close() error { return nil }

// plainGit runs git the way a user's unhardened git would (only the
// machine's global and system configuration are kept out, so the test does
// not depend on them), with a timeout: some attacks make git hang.
func plainGit(dir string, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("git %s: hung for %s", strings.Join(args, " "), timeout)
	}
	return string(out), err
}

// controlRepo is a plain repository with one commit, for the control runs.
func controlRepo(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "control")
	os.MkdirAll(dir, 0o755)
	git(t, dir, "init", "-q")
	write(t, dir, "calc.go", "package calc\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	return dir
}

func markers(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// touch is a shell command that leaves a marker file.
func touch(markerDir, name string) string {
	return "touch '" + filepath.Join(markerDir, name) + "'"
}

// nestedRepo makes dir/name a repository with a committed file and a clean
// filter (in its own .git/config, routed by its .gitattributes) that leaves
// a marker, with the file changed since so any status inside runs it.
func nestedRepo(t *testing.T, dir, name, markerDir string) {
	sub := filepath.Join(dir, name)
	os.MkdirAll(sub, 0o755)
	git(t, sub, "init", "-q")
	write(t, sub, "f.txt", "one\n")
	write(t, sub, ".gitattributes", "*.txt filter=evil\n")
	git(t, sub, "add", "-A")
	git(t, sub, "commit", "-q", "-m", "nested")
	git(t, sub, "config", "filter.evil.clean", touch(markerDir, "nested-filter")+"; cat")
	// Same size, later mtime: git must read the content, through the filter.
	write(t, sub, "f.txt", "two\n")
	later := time.Now().Add(10 * time.Second)
	os.Chtimes(filepath.Join(sub, "f.txt"), later, later)
}

// redTeamCase is one attack.
type redTeamCase struct {
	name string
	// plant writes the attack into dir (the task's worktree, or the
	// control repository); markerDir is where its programs leave markers.
	plant func(t *testing.T, dir, markerDir string)
	// control runs plain git over a planted control repository and
	// says how the attack showed itself; "" means it did not (the
	// fixture is not armed).
	control func(t *testing.T, dir, markerDir string) string
	// skipped and findings are the reasons bcode must report: left out of
	// the checkpoint, and listed by status and accept.
	skipped  []string // "reason path"
	findings []string // "code path"
}

func redTeamCases() []redTeamCase {
	markerAfter := func(args ...[]string) func(t *testing.T, dir, markerDir string) string {
		return func(t *testing.T, dir, markerDir string) string {
			for _, a := range args {
				plainGit(dir, 20*time.Second, a...)
			}
			if m := markers(t, markerDir); len(m) > 0 {
				return "plain git ran " + strings.Join(m, ", ")
			}
			return ""
		}
	}
	fails := func(args ...string) func(t *testing.T, dir, markerDir string) string {
		return func(t *testing.T, dir, markerDir string) string {
			out, err := plainGit(dir, 3*time.Second, args...)
			if err != nil {
				return fmt.Sprintf("plain git %s failed: %v: %s", strings.Join(args, " "), err, lastLine(out))
			}
			return ""
		}
	}
	return []redTeamCase{{
		name: "nested repository with a clean filter",
		plant: func(t *testing.T, dir, markerDir string) {
			nestedRepo(t, dir, "sub", markerDir)
		},
		control: markerAfter([]string{"add", "--all"}, []string{"status"}),
		skipped: []string{"nested_repository sub"},
	}, {
		name: "gitfile to an empty repository",
		plant: func(t *testing.T, dir, markerDir string) {
			git(t, dir, "init", "-q", "--bare", "empty.git")
			write(t, dir, "sub/.git", "gitdir: ../empty.git\n")
			write(t, dir, "sub/code.txt", "in sub\n")
		},
		control: fails("add", "--all"),
		skipped: []string{"bare_repository empty.git", "nested_repository sub"},
	}, {
		name: "embedded bare repository with its own config",
		plant: func(t *testing.T, dir, markerDir string) {
			git(t, dir, "init", "-q", "--bare", "evil.git")
			git(t, filepath.Join(dir, "evil.git"), "config", "core.bare", "false")
			git(t, filepath.Join(dir, "evil.git"), "config", "core.worktree", "..")
			git(t, filepath.Join(dir, "evil.git"), "config", "core.fsmonitor", touch(markerDir, "bare-fsmonitor")+"; false")
		},
		control: func(t *testing.T, dir, markerDir string) string {
			// Plain git takes the repository's files in as ordinary files...
			plainGit(dir, 20*time.Second, "add", "--all")
			out, _ := plainGit(dir, 20*time.Second, "ls-files", "evil.git/config")
			// ...and git run inside it uses its config.
			plainGit(filepath.Join(dir, "evil.git"), 20*time.Second, "status")
			if strings.TrimSpace(out) == "" || len(markers(t, markerDir)) == 0 {
				return ""
			}
			return "plain git add took in evil.git/config, and git in it ran " + strings.Join(markers(t, markerDir), ", ")
		},
		skipped: []string{"bare_repository evil.git"},
	}, {
		name: "sparse 4 GiB file",
		plant: func(t *testing.T, dir, markerDir string) {
			f, err := os.Create(filepath.Join(dir, "huge.bin"))
			if err != nil {
				t.Fatal(err)
			}
			f.Truncate(4 << 30)
			f.Close()
		},
		control: func(t *testing.T, dir, markerDir string) string {
			// The control's file is 1/64th the size, so the suite stays
			// fast: plain git hashes all of it into the object store.
			os.Truncate(filepath.Join(dir, "huge.bin"), 64<<20)
			start := time.Now()
			if _, err := plainGit(dir, 60*time.Second, "add", "--all"); err != nil {
				return ""
			}
			size, _ := plainGit(dir, 5*time.Second, "cat-file", "-s", ":huge.bin")
			if strings.TrimSpace(size) != fmt.Sprint(64<<20) {
				return ""
			}
			return fmt.Sprintf("plain git add hashed a 64 MiB sparse file in full in %s (4 GiB: 64 times that)", time.Since(start).Round(time.Millisecond))
		},
		skipped: []string{"file_too_large huge.bin"},
	}, {
		name: "symbolic links out of the tree",
		plant: func(t *testing.T, dir, markerDir string) {
			os.Symlink("/etc/shadow", filepath.Join(dir, "shadow"))
			os.Symlink(filepath.Join(markerDir, "..", "ledger.db"), filepath.Join(dir, "ledger"))
			os.Symlink("../../../.ssh/id_ed25519", filepath.Join(dir, "key"))
		},
		control: func(t *testing.T, dir, markerDir string) string {
			plainGit(dir, 20*time.Second, "add", "--all")
			out, _ := plainGit(dir, 5*time.Second, "ls-files", "-s", "shadow")
			if !strings.HasPrefix(out, "120000") {
				return ""
			}
			return "plain git add takes the link to /etc/shadow in as it is: " + lastLine(out)
		},
		findings: []string{"symlink_outside key", "symlink_outside ledger", "symlink_outside shadow"},
	}, {
		name: ".gitattributes routing files to a filter driver",
		plant: func(t *testing.T, dir, markerDir string) {
			write(t, dir, ".gitattributes", "*.go filter=evil diff=evil\n")
		},
		control: func(t *testing.T, dir, markerDir string) string {
			// A filter the user's configuration defines (as git-lfs does)
			// runs on whatever the attributes route to it.
			git(t, dir, "config", "filter.evil.clean", touch(markerDir, "attr-filter")+"; cat")
			// A new .go file: git must read it through the filter. The
			// committed calc.go alone goes through it only while its mtime
			// is racily close to the index's, which a slow machine misses.
			write(t, dir, "new.go", "package calc\n")
			return markerAfter([]string{"add", "--all"})(t, dir, markerDir)
		},
		findings: []string{"gitattributes_driver .gitattributes"}, // one finding per line: filter=evil diff=evil
	}, {
		name: ".gitmodules with update = !command",
		plant: func(t *testing.T, dir, markerDir string) {
			nestedRepo(t, dir, "mod", markerDir)
			write(t, dir, ".gitmodules", "[submodule \"mod\"]\n\tpath = mod\n\turl = ./mod\n\tupdate = !"+touch(markerDir, "gitmodules-update")+"\n")
		},
		control: func(t *testing.T, dir, markerDir string) string {
			plainGit(dir, 20*time.Second, "add", "--all")
			if m := markers(t, markerDir); len(m) > 0 {
				return "plain git ran " + strings.Join(m, ", ")
			}
			return fails("status")(t, dir, markerDir)
		},
		skipped:  []string{"nested_repository mod"},
		findings: []string{"gitmodules .gitmodules"},
	}, {
		name: "invalid .gitmodules",
		plant: func(t *testing.T, dir, markerDir string) {
			nestedRepo(t, dir, "mod", markerDir)
			write(t, dir, ".gitmodules", "[submodule \"mod\"]\n\tpath = mod\n\tupdate = bogus\n")
		},
		control: func(t *testing.T, dir, markerDir string) string {
			plainGit(dir, 20*time.Second, "add", "--all")
			return fails("status")(t, dir, markerDir)
		},
		skipped:  []string{"nested_repository mod"},
		findings: []string{"gitmodules .gitmodules"},
	}, {
		name: "fifo named .gitignore",
		plant: func(t *testing.T, dir, markerDir string) {
			if err := mkfifo(filepath.Join(dir, "gen", ".gitignore")); err != nil {
				t.Skip("no fifos here:", err)
			}
			write(t, dir, "gen/out.txt", "generated\n")
		},
		control: fails("add", "--all"),
		skipped: []string{"special_file gen/.gitignore"},
	}, {
		name: "the worktree's .git pointed at a repository of the agent's",
		plant: func(t *testing.T, dir, markerDir string) {
			evil := filepath.Join(dir, ".hidden", "repo")
			os.MkdirAll(evil, 0o755)
			git(t, evil, "init", "-q", "--bare")
			git(t, evil, "config", "core.bare", "false")
			git(t, evil, "config", "core.fsmonitor", touch(markerDir, "dotgit-fsmonitor")+"; false")
			hooks := filepath.Join(evil, "hooks")
			os.MkdirAll(hooks, 0o755)
			os.WriteFile(filepath.Join(hooks, "post-index-change"), []byte("#!/bin/sh\n"+touch(markerDir, "dotgit-hook")+"\n"), 0o755)
			os.RemoveAll(filepath.Join(dir, ".git"))
			write(t, dir, ".git", "gitdir: .hidden/repo\n")
		},
		control:  markerAfter([]string{"status"}, []string{"add", "--all"}),
		skipped:  []string{"bare_repository .hidden/repo"},
		findings: nil,
	}, {
		name: "unreadable and unwritable directories",
		plant: func(t *testing.T, dir, markerDir string) {
			if os.Geteuid() == 0 {
				t.Skip("as root, permissions stop neither a read nor a delete: run as a user to try this one")
			}
			write(t, dir, "locked/inner/x.txt", "x\n")
			os.Chmod(filepath.Join(dir, "locked", "inner"), 0o000)
			os.Chmod(filepath.Join(dir, "locked"), 0o500)
		},
		control: func(t *testing.T, dir, markerDir string) string {
			t.Cleanup(func() {
				os.Chmod(filepath.Join(dir, "locked"), 0o700)
				os.Chmod(filepath.Join(dir, "locked", "inner"), 0o700)
			})
			if err := os.RemoveAll(filepath.Join(dir, "locked")); err != nil {
				return "a plain recursive delete fails: " + err.Error()
			}
			return ""
		},
		skipped: []string{"unreadable_directory locked/inner"},
	}}
}

// lastLine is git's last line of output: its error, after any progress.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func TestRedTeamHostileWorktree(t *testing.T) {
	var mu sync.Mutex
	tried, held := 0, 0
	t.Run("attacks", func(t *testing.T) {
		for _, tc := range redTeamCases() {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				// Armed: the same trick through plain git.
				ctrlMarkers := t.TempDir()
				ctrl := controlRepo(t)
				tc.plant(t, ctrl, ctrlMarkers)
				how := tc.control(t, ctrl, ctrlMarkers)
				if how == "" {
					t.Fatalf("control: plain git was not affected; the attack is not armed")
				}
				t.Logf("armed: %s", how)
				mu.Lock()
				tried++
				mu.Unlock()

				// Held: the same trick in a task's worktree.
				markerDir := t.TempDir()
				repo, e := setup(t)
				start := time.Now()
				tk, err := e.Create(ctx, task.CreateInput{Repo: repo, Goal: "fix Add"})
				if err != nil {
					t.Fatal(err)
				}
				r := &runner.Runner{Engine: e, Agent: plantAgent{plant: func(t *testing.T, wt string) { tc.plant(t, wt, markerDir) }, t: t},
					Checker: verdictChecker(verify.Verified)}
				res, err := r.Run(ctx, tk.ID)
				if err != nil {
					t.Fatalf("the task did not survive the attack: %v", err)
				}
				if res.Task.Status != engine.TaskVerified {
					t.Fatalf("status %s (%s)", res.Task.Status, res.Task.Reason)
				}
				if got := git(t, repo, "show", tk.Branch+":calc.go"); !strings.Contains(got, "a + b") {
					t.Errorf("the checkpoint lost the ordinary edit: %q", got)
				}
				st, err := e.Status(ctx, tk.ID)
				if err != nil {
					t.Fatal(err)
				}
				var gotSkipped, gotFindings []string
				for _, s := range st.Skipped {
					gotSkipped = append(gotSkipped, s.Reason+" "+s.Path)
				}
				for _, f := range st.Findings {
					gotFindings = append(gotFindings, f.Code+" "+f.Path)
				}
				if fmt.Sprint(gotSkipped) != fmt.Sprint(tc.skipped) {
					t.Errorf("skipped %v, want %v", gotSkipped, tc.skipped)
				}
				if fmt.Sprint(gotFindings) != fmt.Sprint(tc.findings) {
					t.Errorf("findings %v, want %v", gotFindings, tc.findings)
				}
				checkNothingNested(t, repo, tk.Branch)

				// Accept refuses what would land, and lands it with --force;
				// or, with nothing to land, it just works. Reject always works
				// (a second task of the same attack, since accept ends one).
				if len(tc.findings) > 0 {
					_, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester"})
					if !errors.Is(err, task.ErrLandsHostile) {
						t.Errorf("accept of a task landing %v: %v, want refused", tc.findings, err)
					} else if first := strings.SplitN(err.Error(), "\n", 3); len(first) < 2 || !strings.Contains(first[1], tc.findings[0][:strings.IndexByte(tc.findings[0], ' ')]) {
						t.Errorf("the refusal does not list the findings first: %v", err)
					}
					acc, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester", Force: true})
					if err != nil {
						t.Fatalf("forced accept: %v", err)
					}
					if !acc.Forced || len(acc.Findings) != len(tc.findings) {
						t.Errorf("forced accept %+v", acc)
					}
				} else {
					if _, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester"}); err != nil {
						t.Fatalf("accept: %v", err)
					}
				}
				tk2, err := e.Create(ctx, task.CreateInput{Repo: repo, Goal: "again"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Run(ctx, tk2.ID); err != nil {
					t.Fatalf("second task: %v", err)
				}
				rej, err := e.Reject(ctx, tk2.ID, "tester")
				if err != nil {
					t.Fatalf("reject: %v", err)
				}
				for _, wt := range rej.Worktrees {
					if _, err := os.Lstat(wt); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("worktree %s is still there after reject", wt)
					}
				}
				if m := markers(t, markerDir); len(m) > 0 {
					t.Errorf("bcode ran the planted programs on the host: %v", m)
				}
				if !t.Failed() {
					mu.Lock()
					held++
					mu.Unlock()
				}
				t.Logf("held in %s (two tasks: checkpoint, status, accept, reject)", time.Since(start).Round(time.Millisecond))
			})
		}
	})
	t.Logf("attacks tried %d, held %d", tried, held)
}

// checkNothingNested: the branch has no gitlink and nothing of a nested
// repository.
func checkNothingNested(t *testing.T, repo, branch string) {
	t.Helper()
	for _, line := range strings.Split(git(t, repo, "ls-tree", "-r", branch), "\n") {
		if strings.HasPrefix(line, "160000") || strings.Contains(line, "/.git/") || strings.Contains(line, "evil.git/") || strings.Contains(line, "empty.git/") || strings.Contains(line, ".hidden/repo/") {
			t.Errorf("the checkpoint took in %q", line)
		}
	}
}

// TestRedTeamAcceptGitlinkWithInvalidGitmodules: a branch that already
// carries a gitlink and a .gitmodules git refuses (as a checkpoint of an
// older bcode, or any commit, could) still lands with --force, and reject
// of another such task works: accept does not go through `git merge`.
func TestRedTeamAcceptGitlinkWithInvalidGitmodules(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	tk := runTask(t, e, repo, verify.Verified)
	// Plant the gitlink and .gitmodules on the task branch with plumbing.
	st, _ := e.Status(ctx, tk.ID)
	wt := st.Worktrees[0]
	write(t, wt, ".gitmodules", "[submodule \"s\"]\n\tpath = s\n\turl = ./s\n\tupdate = !true\n")
	git(t, wt, "add", ".gitmodules")
	git(t, wt, "update-index", "--add", "--cacheinfo", "160000,"+git(t, repo, "rev-parse", "HEAD")+",s")
	git(t, wt, "commit", "-q", "-m", "gitlink and bad .gitmodules")

	// Armed: plain git cannot land it.
	ctrl := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(ctrl), "clone", "-q", repo, ctrl)
	git(t, ctrl, "fetch", "-q", "origin", tk.Branch)
	if out, err := plainGit(ctrl, 10*time.Second, "merge", "--ff-only", "FETCH_HEAD"); err == nil {
		t.Fatalf("control: plain git merge landed it: %s", out)
	} else {
		t.Logf("armed: plain git merge --ff-only: %s", lastLine(out))
	}

	// The branch moved after the (fake) verified check: only --force lands it.
	_, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester"})
	if !errors.Is(err, task.ErrLandsHostile) || !strings.Contains(err.Error(), "gitmodules") || !strings.Contains(err.Error(), tamper.FindingNestedRepo) {
		t.Fatalf("accept: %v, want the .gitmodules and gitlink findings", err)
	}
	acc, err := e.Accept(ctx, tk.ID, task.AcceptOptions{By: "tester", Force: true})
	if err != nil {
		t.Fatalf("forced accept failed: %v", err)
	}
	if acc.Method != "fast-forward" || git(t, repo, "rev-parse", "HEAD") != git(t, repo, "rev-parse", tk.Branch) {
		t.Errorf("accepted %+v; HEAD %s", acc, git(t, repo, "rev-parse", "HEAD"))
	}
}

// TestCheckpointCapsFromBaseConfig: the base's task.max_file_bytes and
// task.max_checkpoint_bytes decide what a checkpoint takes in.
func TestCheckpointCapsFromBaseConfig(t *testing.T) {
	ctx := context.Background()
	repo, e := setup(t)
	write(t, repo, ".bcode/config.toml", "[task]\nmax_file_bytes = 1000\nmax_checkpoint_bytes = 1500\n")
	git(t, repo, "commit", "-q", "-am", "caps")
	tk, err := e.Create(ctx, task.CreateInput{Repo: repo, Goal: "caps"})
	if err != nil {
		t.Fatal(err)
	}
	plant := func(t *testing.T, wt string) {
		write(t, wt, "a.txt", strings.Repeat("a", 900))
		write(t, wt, "b.txt", strings.Repeat("b", 900))
		write(t, wt, "big.txt", strings.Repeat("c", 1001))
	}
	r := &runner.Runner{Engine: e, Agent: plantAgent{plant: plant, t: t}, Checker: verdictChecker(verify.Verified)}
	if _, err := r.Run(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	st, _ := e.Status(ctx, tk.ID)
	var got []string
	for _, s := range st.Skipped {
		got = append(got, s.Reason+" "+s.Path)
	}
	if want := []string{bgit.SkipOverBudget + " b.txt", bgit.SkipTooLarge + " big.txt"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("skipped %v, want %v", got, want)
	}
	if out := git(t, repo, "ls-tree", "--name-only", tk.Branch); !strings.Contains(out, "a.txt") || strings.Contains(out, "b.txt") || strings.Contains(out, "big.txt") {
		t.Errorf("branch holds %q", out)
	}
}
