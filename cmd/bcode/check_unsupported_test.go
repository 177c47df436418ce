package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// TestCheckNamesWhatItCannotJudge: a change to code in a language bcode
// has no adapter for (Ruby here), or in TypeScript, whose tests node
// --test does not run, is error (unsupported), naming the files and their
// languages, in the text and the JSON, where it used to be green with
// "the change adds or modifies no test" without a test run. Beside a Go
// fix the files are named and the Go part keeps its verdict; docs and data
// are not unsupported.
func TestCheckNamesWhatItCannotJudge(t *testing.T) {
	evidenceTools(t)
	base := map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.22\n",
		"calc/calc.go":      "package calc\n\nfunc Abs(x int) int { return x }\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif Abs(2) != 2 {\n\t\tt.Fatal()\n\t}\n}\n",
		"lib/abs.rb":        "def abs(x) = x\n",
		"test/abs_test.rb":  "require_relative '../lib/abs'\nraise unless abs(2) == 2\n",
		"web/util.ts":       "export const abs = (x: number): number => x;\n",
		"README.md":         "# m\n",
	}
	fixedGo := map[string]string{
		"calc/calc.go":          "package calc\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n",
		"calc/negative_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAbsNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(Abs(-3))\n\t}\n}\n",
	}
	cases := []struct {
		name     string
		head     map[string]string
		verdict  verify.Verdict
		code     int
		reason   string   // the first reason's code
		named    []string // paths Report.Unsupported must name, in order
		inText   []string
		notInTxt []string
	}{
		{"Ruby code and its new test", map[string]string{
			"lib/abs.rb":       "def abs(x) = x.abs\n",
			"test/abs_test.rb": "require_relative '../lib/abs'\nraise unless abs(2) == 2\nraise unless abs(-3) == 3\n",
		}, verify.Error, exitError, verify.ReasonUnsupported, []string{"lib/abs.rb", "test/abs_test.rb"},
			[]string{"ERROR", "bcode cannot judge this change: it has no adapter for Ruby (lib/abs.rb, test/abs_test.rb)", "not judged", "Ruby test (modified): bcode has no Ruby adapter"},
			[]string{"adds or modifies no test"}},
		{"TypeScript code and a new test", map[string]string{
			"web/util.ts":      "export const abs = (x: number): number => Math.abs(x);\n",
			"web/util.test.ts": "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { abs } from './util.ts';\ntest('negative', () => assert.strictEqual(abs(-3), 3));\n",
			"README.md":        "# m\n\nabs fixed.\n",
		}, verify.Error, exitError, verify.ReasonUnsupported, []string{"web/util.test.ts", "web/util.ts"},
			[]string{"TypeScript (web/util.test.ts, web/util.ts)", "TypeScript test (added)"}, nil},
		{"docs and data only", map[string]string{
			"README.md":        "# m\n\nmore.\n",
			"web/config.json":  "{\"a\": 1}\n",
			"deploy/site.yaml": "a: 1\n",
		}, verify.Green, exitNotVerified, verify.ReasonNoTestsChanged, nil, nil, []string{"not judged"}},
		{"a Go fix beside TypeScript", merge(fixedGo, map[string]string{"web/two.ts": "export const two = 2\n"}),
			verify.Verified, exitVerified, verify.ReasonCredited, []string{"web/two.ts"},
			[]string{"VERIFIED", "not judged", "web/two.ts", "TypeScript code (added)"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			repo := evidenceRepo(t, base, c.head)
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
			for _, w := range c.notInTxt {
				if strings.Contains(text, w) {
					t.Errorf("the text says %q:\n%s", w, text)
				}
			}
			out.Reset()
			run(append(args, "--json"), &out, &errb)
			var rep verify.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("--json: %v\n%s", err, out.String())
			}
			if rep.Verdict != c.verdict || len(rep.Reasons) == 0 || rep.Reasons[0].Code != c.reason {
				t.Fatalf("verdict %s reasons %+v, want %s with %s", rep.Verdict, rep.Reasons, c.verdict, c.reason)
			}
			var named []string
			for _, f := range rep.Unsupported {
				if f.Code != verify.FindingUnsupported {
					t.Errorf("unsupported entry with code %q", f.Code)
				}
				named = append(named, f.Path)
			}
			if strings.Join(named, " ") != strings.Join(c.named, " ") {
				t.Fatalf("unsupported names %v, want %v", named, c.named)
			}
		})
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
