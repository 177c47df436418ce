package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/internal/testrepo"
)

// journalState is a state directory whose SQLite ledger holds a journal
// of five entries, and the ledger file's path.
func journalState(t *testing.T) (string, string) {
	t.Helper()
	state := t.TempDir()
	path := filepath.Join(state, "ledger.db")
	l, err := ledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []engine.ClaimKind{engine.ClaimVerdict, engine.ClaimExport, engine.ClaimApproval, engine.ClaimAcceptance, engine.ClaimRejection}
	for i, k := range kinds {
		c := &engine.Claim{Kind: k, TaskID: "task1", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i+1))}
		if err := l.AppendClaims(context.Background(), nil, nil, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return state, path
}

func runJournal(args ...string) (int, string, string) {
	var o, e bytes.Buffer
	code := run(append([]string{"journal"}, args...), &o, &e)
	return code, o.String(), e.String()
}

// tamper runs SQL on the ledger file with plain database/sql, as anyone
// with the file could.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestJournalVerifyNamesTampering: an intact journal verifies (exit 0);
// an entry whose payload, kind or time was changed in the ledger file, one
// deleted, or two swapped, is named by journal verify (exit 1) with what
// does not match.
func TestJournalVerifyNamesTampering(t *testing.T) {
	state, _ := journalState(t)
	if code, out, errOut := runJournal("verify", "--state", state); code != 0 || !strings.HasPrefix(out, "5 entries, chain intact (head sha256:") {
		t.Fatalf("intact journal: exit %d, %q %q", code, out, errOut)
	}
	swap := `UPDATE claims SET at = o.at, kind = o.kind, task_id = o.task_id, payload = o.payload,
		payload_digest = o.payload_digest, prev_hash = o.prev_hash, hash = o.hash
		FROM (SELECT seq AS s, at, kind, task_id, payload, payload_digest, prev_hash, hash FROM claims) AS o
		WHERE (claims.seq = 2 AND o.s = 3) OR (claims.seq = 3 AND o.s = 2)`
	for _, c := range []struct {
		name string
		sql  []string
		want string
	}{
		{"payload", []string{`UPDATE claims SET payload = '{"n":30}' WHERE seq = 3`}, "at entry 3: its payload was changed"},
		{"payload and its digest", []string{`UPDATE claims SET payload = '{"n":30}', payload_digest = '` + ledger.PayloadDigest([]byte(`{"n":30}`)) + `' WHERE seq = 3`}, "at entry 3: its time, kind, task or payload digest was changed"},
		{"kind", []string{`UPDATE claims SET kind = 'rejection' WHERE seq = 2`}, "at entry 2: its time, kind, task or payload digest was changed"},
		{"unknown kind", []string{`UPDATE claims SET kind = 'export|x' WHERE seq = 2`}, `at entry 2: its kind "export|x" is not one bcode writes`},
		{"time", []string{`UPDATE claims SET at = '2001-01-01T00:00:00.000000000Z' WHERE seq = 4`}, "at entry 4: its time, kind, task or payload digest was changed"},
		{"unreadable time", []string{`UPDATE claims SET at = 'yesterday' WHERE seq = 4`}, "at entry 4: its time"},
		{"task", []string{`UPDATE claims SET task_id = 'task2' WHERE seq = 5`}, "at entry 5: its time, kind, task or payload digest was changed"},
		{"deleted", []string{`DELETE FROM claims WHERE seq = 3`}, "at entry 3: it is missing (removed): entry 4 comes next"},
		{"deleted and renumbered", []string{`DELETE FROM claims WHERE seq = 3`, `UPDATE claims SET seq = seq - 1 WHERE seq > 3`}, "at entry 3: it does not follow entry 2"},
		{"swapped", []string{swap}, "at entry 2: it does not follow entry 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			state, path := journalState(t)
			tamper(t, path, c.sql...)
			code, out, errOut := runJournal("verify", "--state", state)
			if code != 1 || out != "" || !strings.Contains(errOut, "journal: chain broken "+c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errOut, c.want)
			}
		})
	}
}

// TestJournalExport: the journal exported as JSON lines verifies on its
// own; a line changed in the file is named; a file that is not an export,
// or an export to a directory that does not exist, fails with a reason
// and leaves nothing behind.
func TestJournalExport(t *testing.T) {
	state, _ := journalState(t)
	code, out, errOut := runJournal("export", "--state", state)
	if code != 0 || strings.Count(out, "\n") != 5 || !strings.Contains(out, `"payload":{"n":1}`) {
		t.Fatalf("export to stdout: %d %q %q", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "journal.jsonl")
	if code, _, errOut := runJournal("export", "--state", state, "--out", file); code != 0 || !strings.Contains(errOut, "5 entries written to "+file) {
		t.Fatalf("export --out: %d %q", code, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != out {
		t.Fatalf("--out wrote %q, stdout had %q", b, out)
	}
	if code, out, errOut := runJournal("verify", "--in", file); code != 0 || !strings.HasPrefix(out, "5 entries, chain intact") {
		t.Fatalf("verify --in: %d %q %q", code, out, errOut)
	}
	lines := strings.SplitAfter(out, "\n")
	b, _ := os.ReadFile(file)
	changed := strings.Replace(string(b), `"kind":"approval"`, `"kind":"rejection"`, 1)
	os.WriteFile(file, []byte(changed), 0o644)
	if code, _, errOut := runJournal("verify", "--in", file); code != 1 || !strings.Contains(errOut, "at entry 3: its time, kind, task or payload digest was changed") {
		t.Fatalf("verify --in of a changed export: %d %q (%v)", code, errOut, lines)
	}
	os.WriteFile(file, []byte("{\"seq\":1}\nnot json\n"), 0o644)
	if code, _, errOut := runJournal("verify", "--in", file); code != 1 || !strings.Contains(errOut, "chain broken at entry 1") {
		t.Fatalf("verify --in of garbage: %d %q", code, errOut)
	}
	os.WriteFile(file, []byte("not json\n"), 0o644)
	if code, _, errOut := runJournal("verify", "--in", file); code != 1 || !strings.Contains(errOut, "entry 1 (after 0 that check) is not a journal entry") {
		t.Fatalf("verify --in of garbage: %d %q", code, errOut)
	}
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "j.jsonl")
	if code, _, errOut := runJournal("export", "--state", state, "--out", missing); code != 1 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("export to a missing dir: %d %q", code, errOut)
	}
	if code, _, errOut := runJournal("verify", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Fatalf("verify extra: %d %q", code, errOut)
	}
	empty := t.TempDir()
	if code, out, _ := runJournal("verify", "--state", empty); code != 0 || out != "0 entries, chain intact\n" {
		t.Fatalf("no ledger: %d %q", code, out)
	}
}

// TestTaskAcceptDigest: task diff prints the digest of the change it shows
// (on stderr, stdout stays the diff); accept --digest with it after the
// task's branch moved is refused and main stays; the digest of the change
// shown now lands it, and the journal has the approval.
func TestTaskAcceptDigest(t *testing.T) {
	r := testrepo.FromFiles(t, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"})
	state := t.TempDir()
	code, out, errOut := runTaskCmd(t, r.Dir, state, "create", "make Add add")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	branch := "bcode/" + id
	r.Git("checkout", "-q", "-b", branch)
	r.WriteFile("calc.go", "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n")
	r.Commit("the agent's change")
	r.Git("checkout", "-q", "main")
	base := r.Git("rev-parse", "main")

	digestOf := func() string {
		t.Helper()
		code, out, errOut := runTaskCmd(t, r.Dir, state, "diff", id)
		d, _, ok := strings.Cut(strings.TrimPrefix(errOut, "change "), " ")
		if code != 0 || !strings.HasPrefix(out, "diff --git a/calc.go b/calc.go") || !ok || !strings.Contains(errOut, "bcode task accept "+id+" --digest "+d) {
			t.Fatalf("diff: %d\n%s\n%s", code, out, errOut)
		}
		return d
	}
	seen := digestOf()
	r.Git("checkout", "-q", branch)
	r.WriteFile("notes.txt", "more\n")
	r.Commit("after the review")
	r.Git("checkout", "-q", "main")

	code, _, errOut = runTaskCmd(t, r.Dir, state, "accept", id, "--force", "--digest", seen)
	if code != 1 || !strings.Contains(errOut, "the change is not the one you reviewed: you reviewed "+seen) || !strings.Contains(errOut, "nothing landed") {
		t.Fatalf("accept with a stale digest: %d %s", code, errOut)
	}
	if got := r.Git("rev-parse", "main"); got != base {
		t.Fatalf("main moved to %s", got)
	}
	now := digestOf()
	code, out, errOut = runTaskCmd(t, r.Dir, state, "accept", id, "--force", "--digest", now)
	if code != 0 || !strings.Contains(out, "approved change "+now) {
		t.Fatalf("accept with the digest shown: %d %s %s", code, out, errOut)
	}
	if got, want := r.Git("rev-parse", "main"), r.Git("rev-parse", branch); got != want {
		t.Fatalf("main at %s, want %s", got, want)
	}
	code, out, _ = runJournal("export", "--state", state)
	if code != 0 || !strings.Contains(out, `"kind":"approval"`) || !strings.Contains(out, `"digest":"`+now+`"`) || !strings.Contains(out, `"reviewed":true`) {
		t.Fatalf("journal: %s", out)
	}
	if code, out, _ := runJournal("verify", "--state", state); code != 0 || !strings.HasPrefix(out, "2 entries, chain intact") {
		t.Fatalf("verify: %d %s", code, out)
	}
}
