package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// TestCLIBenchExitCodes runs bcode bench scorecard and gate on the
// reports of testdata/script/bench_scorecard.txtar for their exact exit
// codes, which a script cannot see: 0 pass, 1 regressed (or a report
// that cannot be read), 2 not comparable or a usage error.
func TestCLIBenchExitCodes(t *testing.T) {
	dir := t.TempDir()
	ar, err := txtar.ParseFile("testdata/script/bench_scorecard.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(at("broken.json"), []byte(`{"suite": "tasks", "results": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{[]string{"scorecard", at("base1.json"), "--out", at("base.json")}, 0, "scorecard written"},
		{[]string{"scorecard", at("cand.json"), "--out", at("cand-sc.json")}, 0, ""},
		{[]string{"scorecard", at("same.json"), "--out", at("same-sc.json")}, 0, ""},
		{[]string{"scorecard", at("budgets.json"), "--out", at("budgets-sc.json")}, 0, ""},
		{[]string{"scorecard", at("scripted.json"), "--out", at("scripted-sc.json")}, 0, ""},
		{[]string{"scorecard", at("broken.json")}, 1, "broken.json"},
		{[]string{"scorecard", at("missing.json")}, 1, "no such file"},
		{[]string{"scorecard", at("base1.json"), at("scripted.json")}, 2, "scripted model"},
		{[]string{"scorecard"}, 2, "give one or more suite reports"},
		{[]string{"gate", "--baseline", at("base.json"), "--candidate", at("same-sc.json")}, 0, "PASS"},
		{[]string{"gate", "--baseline", at("base.json"), "--candidate", at("cand-sc.json")}, 1, "REGRESSED"},
		{[]string{"gate", "--baseline", at("base.json"), "--candidate", at("budgets-sc.json")}, 2, "budgets differ"},
		{[]string{"gate", "--baseline", at("base.json"), "--candidate", at("scripted-sc.json")}, 2, "scripted model"},
		{[]string{"gate", "--baseline", at("base.json"), "--candidate", at("missing.json")}, 2, "no such file"},
		{[]string{"gate", "--baseline", at("base.json"), "--candidate", at("same-sc.json"), "--policy", at("typo.toml")}, 2, "rates.sucess"},
		{[]string{"gate", "--baseline", at("base.json"), "--candidate", at("same-sc.json"), "--dir", dir}, 2, "not both"},
		{[]string{"gate", "--dir", at("nowhere")}, 2, "nowhere"},
		{[]string{"gate", "--dir", dir}, 2, "holds no suite directory"},
	}
	for _, s := range steps {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"bench"}, s.args...), &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("bcode bench %s: exit %d, want %d and %q in\n%s", strings.Join(s.args, " "), code, s.code, s.want, out)
		}
	}
	// A suite directory lacking its candidate is an error, not a pass.
	if err := os.MkdirAll(at("suites/tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(at("base.json"), at("suites/tasks/baseline.json")); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "gate", "--dir", at("suites")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "candidate.json") {
		t.Errorf("--dir without a candidate: exit %d, stderr %q", code, stderr.String())
	}
}
