package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// TestMain stops the PostgreSQL cluster a test of this package started.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// writeAgent writes its files in the worktree in one turn and is done.
type writeAgent map[string]string

func (a writeAgent) StartAttempt(ctx context.Context, in runner.AttemptInput) (runner.Session, error) {
	return writeSession{files: a, dir: in.Worktree}, nil
}

type writeSession struct {
	files map[string]string
	dir   string
}

func (s writeSession) Turn(context.Context) (runner.TurnResult, error) {
	for name, body := range s.files {
		if err := os.WriteFile(filepath.Join(s.dir, name), []byte(body), 0o644); err != nil {
			return runner.TurnResult{}, err
		}
	}
	return runner.TurnResult{Summary: "fix Add and test it", Done: true, TokensUsed: 10}, nil
}

func (writeSession) Close() error { return nil }

// TestExportFromASharedLedger: a task a runner verified with the real gate
// in a shared PostgreSQL ledger is exported by an engine opened on that
// ledger, its key in the local state directory, and the attestation
// checks offline; an export of a task the ledger does not hold is
// engine.ErrNotFound and writes nothing.
func TestExportFromASharedLedger(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	url := pgtest.URL(t)
	shared, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	repo := testrepo.FromFiles(t, map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.21\n",
		"calc.go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
	}).Dir
	tasks := task.New(shared)
	tasks.StateDir = t.TempDir()
	tk, err := tasks.Create(ctx, task.CreateInput{Repo: repo, Goal: "make Add add"})
	if err != nil {
		t.Fatal(err)
	}
	scanner, err := secrets.NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	r := &runner.Runner{Engine: tasks, Checker: runner.GateChecker{Sandbox: host.Sandbox{}, Recorder: shared, Scanner: scanner},
		Agent: writeAgent{
			"calc.go":      "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
			"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(Add(2, 2))\n\t}\n}\n",
		}}
	if res, err := r.Run(ctx, tk.ID); err != nil || res.Task.Status != engine.TaskVerified {
		t.Fatalf("run: %v (status %v)", err, res)
	}

	choice, err := app.ResolveLedger(url)
	if err != nil {
		t.Fatal(err)
	}
	state, out := t.TempDir(), t.TempDir()
	eng := app.Open(app.Options{Ledger: choice, LedgerPath: filepath.Join(state, "ledger.db")})
	defer eng.Close()
	req := app.ExportRequest{TaskID: tk.ID, DiffPath: filepath.Join(out, "d.diff"), AttestationPath: filepath.Join(out, "a.json")}
	exp, err := eng.ExportTask(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Predicate.Verdict != "verified" || exp.Predicate.Task.Attempts != 1 || len(exp.Predicate.Credited) != 1 || exp.KeyID == "" {
		t.Errorf("export: %+v", exp.Predicate)
	}
	if _, err := os.Stat(filepath.Join(state, "attest.key")); err != nil {
		t.Errorf("the key is not in the local state directory: %v", err)
	}
	v, err := eng.VerifyAttestation(ctx, app.VerifyRequest{AttestationPath: req.AttestationPath, DiffPath: req.DiffPath})
	if err != nil || v.DiffDigest != exp.Digest || v.KeyID != exp.KeyID || v.Predicate.Head != exp.Head {
		t.Fatalf("verify: %v %+v", err, v)
	}

	missing := app.ExportRequest{TaskID: "nosuchtask", DiffPath: filepath.Join(out, "none.diff")}
	if _, err := eng.ExportTask(ctx, missing); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := os.Stat(missing.DiffPath); err == nil {
		t.Error("a refused export wrote its diff")
	}
}
