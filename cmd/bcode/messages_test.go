package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessagesSayWhatHappened runs each situation of issue #19's item 5
// through the command and quotes what it must say. (A full disk and a
// damaged ledger page are also shown on the ledger itself, in
// engine/ledger's TestDiskFullMessage and TestDamagedPageMessage.)
func TestMessagesSayWhatHappened(t *testing.T) {
	evidenceTools(t)
	state := t.TempDir()
	repo := slowRepo(t) // two commits: base, head
	shallow := filepath.Join(t.TempDir(), "shallow")
	if out, err := exec.Command("git", "clone", "-q", "--depth", "1", "file://"+repo, shallow).CombinedOutput(); err != nil {
		t.Fatalf("git clone --depth 1: %v\n%s", err, out)
	}
	// A ledger with a damaged page: written by bcode, then overwritten in
	// the middle of its tasks.
	damaged := t.TempDir()
	for i := 0; i < 30; i++ {
		if code, _, errOut := runTaskCmd(t, repo, damaged, "create", "goal "+strings.Repeat("x", 3000)); code != 0 {
			t.Fatalf("task create: %s", errOut)
		}
	}
	ledgerFile := filepath.Join(damaged, "ledger.db")
	if fi, err := os.Stat(ledgerFile); err == nil {
		f, _ := os.OpenFile(ledgerFile, os.O_RDWR, 0)
		for off := int64(3 * 4096); off+4096 <= fi.Size(); off += 2 * 4096 {
			f.WriteAt(bytes.Repeat([]byte{0xff}, 4096), off)
		}
		f.Close()
	}

	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"task cancel --wait -1s is a flag error", []string{"task", "cancel", "someid", "--wait", "-1s", "--state", state},
			2, []string{`invalid value "-1s" for flag -wait: out of range: give a duration from 1s to 168h0m0s`}},
		{"pack --task NOSUCH fails", []string{"pack", "--task", "NOSUCH", "--repo", repo, "--state", state, "--tokenizer", "http://127.0.0.1:1"},
			2, []string{`bcode pack: no task "NOSUCH" in the ledger at ` + filepath.Join(state, "ledger.db") + ` (list them with bcode task list`}},
		{"pack --tokenizer with another scheme", []string{"pack", "--goal", "x", "--repo", repo, "--state", state, "--tokenizer", "ftp://127.0.0.1:8080"},
			2, []string{`bcode pack: --tokenizer: "ftp://127.0.0.1:8080" is not an http(s) URL with a host (give the llama-server address, like http://127.0.0.1:8080)`}},
		{"pack --tokenizer without a host", []string{"pack", "--goal", "x", "--repo", repo, "--tokenizer", "http://"},
			2, []string{`--tokenizer: "http://" is not an http(s) URL with a host`}},
		{"pack --tokenizer that is not a URL", []string{"pack", "--goal", "x", "--repo", repo, "--tokenizer", "127.0.0.1:8080"},
			2, []string{`--tokenizer: "127.0.0.1:8080" is not a`}},
		{"pack --tokenizer with a bad port", []string{"pack", "--goal", "x", "--repo", repo, "--tokenizer", "http://127.0.0.1:99999"},
			2, []string{`--tokenizer: "http://127.0.0.1:99999" has port "99999", not one from 1 to 65535`}},
		{"check base = head", []string{"check", "--repo", repo, "--base", "HEAD", "--head", "HEAD", "--no-evidence"},
			2, []string{"ERROR", "base and head are the same commit (or the same tree): there is nothing to check; pass --base REV to compare with an earlier commit"}},
		{"check in a depth-1 clone", []string{"check", "--repo", shallow, "--base", "HEAD~1", "--head", "HEAD", "--no-evidence"},
			2, []string{`bad revision "HEAD~1"`, "this clone is shallow, so older commits are not in it: fetch the history with `git fetch --unshallow`"}},
		{"damaged ledger page", []string{"task", "status", "--repo", repo, "--state", damaged},
			1, []string{"ledger at " + ledgerFile + " is damaged: ", "sqlite3 " + ledgerFile + " '.recover'", "or move it aside and bcode starts a new ledger"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(c.args, &out, &errb)
			all := out.String() + errb.String()
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, all)
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}

	t.Run("a goal with control characters is escaped", func(t *testing.T) {
		goal := "fix\x1b]0;owned\x07 it\x1b[2J\rnow\u202e\x7f\xc2\x9b"
		st := t.TempDir()
		code, id, errOut := runTaskCmd(t, repo, st, "create", goal)
		if code != 0 {
			t.Fatalf("create: %s", errOut)
		}
		for _, args := range [][]string{{"status"}, {"status", strings.TrimSpace(id)}} {
			_, out, _ := runTaskCmd(t, repo, st, args...)
			// Whitespace (the \r) folds into one space on a one-line goal.
			want := `fix\x1b]0;owned\x07 it\x1b[2J now\u202e\x7f\u009b`
			if !strings.Contains(out, want) {
				t.Errorf("task %v: output lacks %q:\n%s", args, want, out)
			}
			if strings.ContainsAny(out, "\x1b\x07\r\u202e\x7f\u009b") {
				t.Errorf("task %v: a raw control character reached the terminal: %q", args, out)
			}
		}
	})
}
