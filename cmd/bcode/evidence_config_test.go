package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/server"
	lspcommand "github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/fake"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// TestEvidenceConfigAppliesEverywhere: the base commit's [evidence]
// settings govern `bcode evidence`, bcode-ls and the gate's mutation
// evidence (`bcode check`) alike (all three go through
// check.EvidenceOptions). A run_timeout of 1ms is too short for any
// mutant's tests, so every covered mutant ends `timeout` on all three
// surfaces; without the setting TestUnder kills them. The change fixes a
// boundary its new test pins (fails on the base, passes on the head), so
// the gate credits the test and runs the mutants.
func TestEvidenceConfigAppliesEverywhere(t *testing.T) {
	evidenceTools(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("BCODE_STATE", t.TempDir())
	small := "package lim\n\nimport \"testing\"\n\nfunc TestSmall(t *testing.T) {\n\tif !Under(1) {\n\t\tt.Fatal(\"Under(1)\")\n\t}\n}\n"
	r := testrepo.FromFiles(t, map[string]string{
		"go.mod":             "module example.com/lim\n\ngo 1.22\n",
		"lim/lim.go":         "package lim\n\n// Under reports whether n is at most 10.\nfunc Under(n int) bool {\n\treturn n < 10\n}\n",
		"lim/lim_test.go":    small,
		".bcode/config.toml": "[evidence]\nrun_timeout = \"1ms\"\n",
	})
	r.Write(map[string]string{
		"lim/lim.go":      "package lim\n\n// Under reports whether n is at most 10.\nfunc Under(n int) bool {\n\treturn n <= 10\n}\n",
		"lim/lim_test.go": small + "\nfunc TestUnder(t *testing.T) {\n\tif !Under(10) || Under(11) {\n\t\tt.Fatal(\"Under\")\n\t}\n}\n",
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
				t.Errorf("%s: mutant %s %s → %s is %s (by %q: %s), want timeout under run_timeout = 1ms", surface, m.File, m.Original, m.Mutated, m.Verdict, m.KilledBy, m.Detail)
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

	var gout, gerr bytes.Buffer
	code = run([]string{"check", "--repo", r.Dir, "--base", "HEAD", "--json", "-q"}, &gout, &gerr)
	var gate verify.Report
	if err := json.Unmarshal(gout.Bytes(), &gate); err != nil {
		t.Fatalf("bcode check --json: exit %d, %v\n%s\n%s", code, err, gout.String(), gerr.String())
	}
	if gate.Mutants == nil {
		t.Fatalf("the gate ran no mutation evidence (verdict %s, reasons %v): the test would prove nothing", gate.Verdict, gate.Reasons)
	}
	var ms []mutate.Mutant
	for _, m := range gate.Mutants.Mutants {
		ms = append(ms, mutate.Mutant{File: m.File, Original: m.Original, Mutated: m.Mutated, Verdict: mutate.Verdict(m.Verdict)})
	}
	onlyTimeouts("bcode check", ms)
}
