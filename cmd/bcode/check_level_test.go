package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// TestCheckLevels runs `bcode check` on real Go repositories: each
// verification level reached and each missed, the verdict the base's
// verify.level makes of it, and the level in the text and the JSON.
func TestCheckLevels(t *testing.T) {
	evidenceTools(t)
	calc := "package calc\n\nfunc Abs(x int) int { return x }\n\nfunc Double(x int) int { return 2 * x }\n"
	base := map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.22\n",
		"calc/calc.go":      calc,
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(Double(2))\n\t}\n}\n",
	}
	broken := map[string]string{"other/other_test.go": "package other\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { t.Fatal(\"broken on the base\") }\n"}
	level := func(l string) map[string]string {
		return map[string]string{".bcode/config.toml": "[verify]\nlevel = \"" + l + "\"\n"}
	}
	negTest := map[string]string{"calc/neg_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAbsNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(Abs(-3))\n\t}\n}\n"}
	fix := merge(negTest, map[string]string{"calc/calc.go": strings.Replace(calc, "return x }", "if x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}", 1)})
	fixBreaking := merge(fix, map[string]string{"calc/calc.go": strings.Replace(fix["calc/calc.go"], "2 * x", "3 * x", 1)})
	passing := map[string]string{"calc/pos_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAbsPositive(t *testing.T) {\n\tif Abs(3) != 3 {\n\t\tt.Fatal()\n\t}\n}\n"}
	cases := []struct {
		name       string
		base, head map[string]string
		verdict    verify.Verdict
		code       int
		reached    verify.Level
		inText     []string
	}{
		{"V3 reached", merge(base, level("V3")), fix, verify.Verified, exitVerified, verify.LevelV3, []string{"VERIFIED", "level: V3 reached, V3 required"}},
		{"V3 missed: a test fails on both sides", merge(base, broken, level("V3")), fix, verify.Green, exitNotVerified, verify.LevelV2,
			[]string{"GREEN", "reached V2, the base's verify.level asks for V3", "./other.TestBroken"}},
		{"V2 reached by default beside a broken test", merge(base, broken), fix, verify.Verified, exitVerified, verify.LevelV2, []string{"level: V2 reached, V2 required", "missing for V3"}},
		{"V2 missed: a regression", base, fixBreaking, verify.Failed, exitNotVerified, verify.LevelV1, []string{"FAILED", "level: V1 reached, V2 required", "pass-to-pass regressions: ./calc.TestDouble"}},
		{"V1 reached: the regression is named", merge(base, level("V1")), fixBreaking, verify.Verified, exitVerified, verify.LevelV1, []string{"VERIFIED", "verified at V1", "not V2: pass-to-pass regressions"}},
		{"V1 missed: nothing flips", merge(base, level("V1")), passing, verify.Green, exitNotVerified, verify.LevelNone, []string{"level: none reached, V1 required", "V1: no test fails on the base"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := evidenceRepo(t, c.base, c.head)
			args := []string{"check", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "-q", "--no-evidence", "--state", t.TempDir()}
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			text := out.String()
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, text, errb.String())
			}
			for _, w := range c.inText {
				if !strings.Contains(text, w) {
					t.Errorf("the text does not say %q:\n%s", w, text)
				}
			}
			out.Reset()
			sarifPath := filepath.Join(t.TempDir(), "check.sarif")
			run(append(args, "--json", "--sarif", sarifPath), &out, &errb)
			var rep verify.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("--json: %v\n%s", err, out.String())
			}
			if rep.Verdict != c.verdict || rep.Level != c.reached {
				t.Fatalf("JSON: verdict %s at %s, want %s at %s; %+v", rep.Verdict, rep.Level, c.verdict, c.reached, rep.Reasons)
			}
			if rep.LevelRequired == "" || (rep.Level != verify.LevelV3 && rep.LevelMissing == "") {
				t.Errorf("JSON: required %q, missing %q", rep.LevelRequired, rep.LevelMissing)
			}
			// SARIF: the run's invocation says the verdict and the levels.
			data, err := os.ReadFile(sarifPath)
			if err != nil {
				t.Fatalf("--sarif: %v", err)
			}
			var log struct {
				Version string `json:"version"`
				Runs    []struct {
					Invocations []struct {
						Properties struct {
							Verdict       verify.Verdict `json:"verdict"`
							Level         verify.Level   `json:"level"`
							LevelRequired verify.Level   `json:"level_required"`
						} `json:"properties"`
					} `json:"invocations"`
					Results []struct {
						RuleID string `json:"ruleId"`
					} `json:"results"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(data, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Invocations) != 1 {
				t.Fatalf("--sarif: %v\n%s", err, data)
			}
			p := log.Runs[0].Invocations[0].Properties
			if p.Verdict != c.verdict || p.Level != c.reached || p.LevelRequired != rep.LevelRequired || len(log.Runs[0].Results) != len(rep.Reasons) {
				t.Errorf("SARIF: %+v with %d results, want %s at %s (required %s) and %d results", p, len(log.Runs[0].Results), c.verdict, c.reached, rep.LevelRequired, len(rep.Reasons))
			}
		})
	}
}
