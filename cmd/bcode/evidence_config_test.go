package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/server"
	lspcommand "github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/fake"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// TestEvidenceConfigAppliesEverywhere: the base commit's [evidence]
// settings govern `bcode evidence` and bcode-ls as they govern the gate
// (all three go through check.EvidenceOptions). A run_timeout of 1ms is
// too short for any mutant's tests, so every covered mutant ends
// `timeout` on both surfaces; without the setting the same code's mutants
// are killed or survive (TestEvidenceSurvivorExitsOne).
func TestEvidenceConfigAppliesEverywhere(t *testing.T) {
	evidenceTools(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("BCODE_STATE", t.TempDir())
	r := testrepo.FromFiles(t, map[string]string{
		"go.mod":             "module example.com/lim\n\ngo 1.22\n",
		"lim/lim.go":         evBase,
		"lim/lim_test.go":    "package lim\n\nimport \"testing\"\n\nfunc TestKeep(t *testing.T) { Keep() }\n",
		".bcode/config.toml": "[evidence]\nrun_timeout = \"1ms\"\n",
	})
	r.Write(map[string]string{
		"lim/lim.go":      evHead,
		"lim/lim_test.go": "package lim\n\nimport \"testing\"\n\nfunc TestKeep(t *testing.T) { Keep() }\n\nfunc TestUnder(t *testing.T) {\n\tif !Under(1) || Under(99) {\n\t\tt.Fatal(\"Under\")\n\t}\n}\n",
	})
	onlyTimeouts := func(surface string, ms []mutate.Mutant) {
		t.Helper()
		covered := 0
		for _, m := range ms {
			switch m.Verdict {
			case mutate.NotCovered, mutate.Unviable:
				continue
			case mutate.Timeout:
				covered++
			default:
				t.Errorf("%s: mutant %s %s → %s is %s, want timeout under run_timeout = 1ms", surface, m.File, m.Original, m.Mutated, m.Verdict)
			}
		}
		if covered == 0 {
			t.Errorf("%s: no covered mutant in %d: the test would prove nothing", surface, len(ms))
		}
	}

	code, out, errs := runEvidence(t, "--repo", r.Dir, "--base", "HEAD", "--json", "--workers", "2")
	var cli mutate.Report
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatalf("bcode evidence --json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	onlyTimeouts("bcode evidence", cli.Mutants)

	e := fake.Connect(t, r.Dir, server.Options{NoWatch: true, NoEvidenceOnOpen: true, NoEvidenceOnSave: true, Workers: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := e.Initialize(ctx, fake.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Execute(ctx, lspcommand.New("", lspcommand.EvidenceRun, lspcommand.EvidenceRunArgs{}), nil); err != nil {
		t.Fatal(err)
	}
	var rep server.EvidenceReport
	if err := e.Conn.Call(ctx, server.MethodEvidence, map[string]any{"wait": true}, &rep); err != nil {
		t.Fatalf("bcode/evidence: %v", err)
	}
	if rep.State != "done" {
		t.Fatalf("bcode-ls evidence run %s: %s", rep.State, rep.Error)
	}
	onlyTimeouts("bcode-ls", rep.Mutants)
}
