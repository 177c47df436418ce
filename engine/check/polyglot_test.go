package check_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// The JavaScript and Rust cases run the real gate (check.Run) on two-commit
// repositories with the real node and cargo, as `bcode check` does.

const (
	jsClampBuggy = "function clamp(x, lo, hi) {\n  if (x < lo) return lo;\n  if (x > hi) return x;\n  return x;\n}\nmodule.exports = { clamp };\n"
	jsClampFixed = "function clamp(x, lo, hi) {\n  if (x < lo) return lo;\n  if (x > hi) return hi;\n  return x;\n}\nmodule.exports = { clamp };\n"
	jsTestHead   = "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst { clamp } = require('../calc.js');\n\n"
	jsInside     = "test('inside', () => {\n  assert.strictEqual(clamp(5, 0, 10), 5);\n});\n"
	jsBelow      = "test('below', () => {\n  assert.strictEqual(clamp(-5, 0, 10), 0);\n});\n"
	jsAbove      = "test('above', () => {\n  assert.strictEqual(clamp(15, 0, 10), 10);\n});\n"
)

// jsClampRepo commits a node:test project whose clamp lets values above
// the range through, then the head: the fixed clamp and the test file
// headTests.
func jsClampRepo(t *testing.T, headTests string) *gitRepo {
	t.Helper()
	testenv.Node(t)
	r := newGitRepo(t)
	r.write(map[string]string{
		"package.json":      "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"scripts\": { \"test\": \"node --test\" }\n}\n",
		"calc.js":           jsClampBuggy,
		"test/calc.test.js": jsTestHead + jsInside + "\n" + jsBelow,
	})
	r.commit("clamp")
	r.write(map[string]string{"calc.js": jsClampFixed, "test/calc.test.js": headTests})
	r.commit("clamp values above the range")
	return r
}

func checkHead(t *testing.T, dir string, evidence bool) *verify.Report {
	t.Helper()
	rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: dir, Base: "HEAD~1", Head: "HEAD", Runner: host.New(), NoEvidence: !evidence})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func creditedIDs(rep *verify.Report) []string {
	var ids []string
	for _, c := range rep.Credited() {
		ids = append(ids, c.Language+":"+c.Package+":"+c.Name)
	}
	return ids
}

func hasTamper(rep *verify.Report, code string) bool {
	for _, f := range rep.Tamper {
		if f.Code == code {
			return true
		}
	}
	return false
}

// once runs try and fails the test with the problem it reports. (Node's
// forced exit used to drop results, nodejs/node#64833; verify/javascript's
// preload ends that, so a case runs once.)
func once(t *testing.T, try func() string) {
	t.Helper()
	if problem := try(); problem != "" {
		t.Fatal(problem)
	}
}

// TestGateJavaScriptFix: a JavaScript bug fix with a new node:test test is
// verified, credited by the test's ID, and the mutants of the changed
// line are in the report, killed by the JavaScript tests by name.
func TestGateJavaScriptFix(t *testing.T) {
	r := jsClampRepo(t, jsTestHead+jsInside+"\n"+jsBelow+"\n"+jsAbove)
	once(t, func() string {
		rep := checkHead(t, r.dir, true)
		problem := jsFixProblem(rep)
		if problem == "" {
			for _, mv := range rep.Mutants.Mutants {
				t.Logf("%s %s %s", mv.Rewrite(), mv.Verdict, mv.KilledBy)
			}
		}
		return problem
	})
}

// jsFixProblem says what is wrong with the JavaScript fix's report, or "".
func jsFixProblem(rep *verify.Report) string {
	if rep.Verdict != verify.Verified {
		return fmt.Sprintf("verdict %s, want verified: %s", rep.Verdict, describe(rep))
	}
	if ids := creditedIDs(rep); len(ids) != 1 || ids[0] != "javascript:test/calc.test.js:above" {
		return fmt.Sprintf("credited %v, want javascript:test/calc.test.js:above", ids)
	}
	m := rep.Mutants
	if m == nil || len(m.Mutants) == 0 {
		return fmt.Sprintf("mutation summary %+v: want the mutants of calc.js's changed line", m)
	}
	killed := 0
	for _, mv := range m.Mutants {
		if mv.File != "calc.js" || mv.Line != 3 {
			return fmt.Sprintf("mutant %+v: only calc.js line 3 changed", mv)
		}
		if mv.Verdict == "killed" {
			killed++
			if !strings.HasPrefix(mv.KilledBy, "test/calc.test.js::") {
				return fmt.Sprintf("killed by %q: want a JavaScript test's file::name", mv.KilledBy)
			}
		}
	}
	if killed == 0 || m.CreditedKills == 0 || m.Survived == 0 {
		// x >= hi returns hi == x: it survives; x <= hi fails "above".
		return fmt.Sprintf("want a mutant killed by the credited test and one surviving: %+v", m.Mutants)
	}
	return ""
}

// TestGateJavaScriptHiding: the same fix, with the old test hidden from
// the run (newly skipped, deleted) or the others silenced by a new
// .only, is tampered.
func TestGateJavaScriptHiding(t *testing.T) {
	cases := map[string]string{
		"skip":    jsTestHead + strings.Replace(jsInside, "test(", "test.skip(", 1) + "\n" + jsBelow + "\n" + jsAbove,
		"deleted": jsTestHead + jsBelow + "\n" + jsAbove,
		"only":    jsTestHead + jsInside + "\n" + jsBelow + "\n" + strings.Replace(jsAbove, "test(", "test.only(", 1),
	}
	for name, tests := range cases {
		t.Run(name, func(t *testing.T) {
			rep := checkHead(t, jsClampRepo(t, tests).dir, false)
			if rep.Verdict != verify.Tampered {
				t.Fatalf("verdict %s, want tampered: %s", rep.Verdict, describe(rep))
			}
		})
	}
}

const (
	rustCargo     = "[package]\nname = \"clamp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n"
	rustBuggy     = "pub fn clamp(x: i32, lo: i32, hi: i32) -> i32 {\n    if x < lo {\n        lo\n    } else if x > hi {\n        x\n    } else {\n        x\n    }\n}\n"
	rustFixed     = "pub fn clamp(x: i32, lo: i32, hi: i32) -> i32 {\n    if x < lo {\n        lo\n    } else if x > hi {\n        hi\n    } else {\n        x\n    }\n}\n"
	rustTestsHead = "\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n"
	rustInside    = "    #[test]\n    fn inside() {\n        assert_eq!(clamp(5, 0, 10), 5);\n    }\n"
	rustAbove     = "    #[test]\n    fn above() {\n        assert_eq!(clamp(15, 0, 10), 10);\n    }\n"
	// rustIntegration is tests/clamp.rs on the base.
	rustIntegration = "use clamp::clamp;\n\n#[test]\nfn below() {\n    assert_eq!(clamp(-5, 0, 10), 0);\n}\n"
)

// rustClampRepo commits a crate whose clamp lets values above the range
// through, with a unit test in src/lib.rs and an integration test in
// tests/clamp.rs, then head's files.
func rustClampRepo(t *testing.T, head map[string]string) *gitRepo {
	t.Helper()
	testenv.Command(t, "cargo", "apt-get install cargo (or rustup's, with ~/.cargo/bin on PATH)")
	r := newGitRepo(t)
	r.write(map[string]string{
		"Cargo.toml":     rustCargo,
		".gitignore":     "/target\n",
		"src/lib.rs":     rustBuggy + rustTestsHead + rustInside + "}\n",
		"tests/clamp.rs": rustIntegration,
	})
	r.commit("clamp")
	r.write(head)
	r.commit("head")
	return r
}

// TestGateRustFix: a Rust fix with a new #[test] is verified and credited
// by the test's ID, whether the test is an integration test (tests/) or
// in the #[cfg(test)] module of the fixed file itself (the mixed
// snapshots take that file's code from one side and its tests from the
// other: verify.TestSplicer); #[ignore] on the test that passed is
// tampered, and so is an in-file test whose expectation the change
// rewrote to pass on wrong code (the base's version of it fails on the
// head).
func TestGateRustFix(t *testing.T) {
	t.Run("fix with its test in the same file", func(t *testing.T) {
		rep := checkHead(t, rustClampRepo(t, map[string]string{
			"src/lib.rs": rustFixed + rustTestsHead + rustInside + "\n" + rustAbove + "}\n",
		}).dir, false)
		if rep.Verdict != verify.Verified {
			t.Fatalf("verdict %s, want verified: %s", rep.Verdict, describe(rep))
		}
		if ids := creditedIDs(rep); len(ids) != 1 || ids[0] != "rust:src/lib.rs:tests::above" {
			t.Errorf("credited %v, want rust:src/lib.rs:tests::above", ids)
		}
	})
	t.Run("evidence", func(t *testing.T) {
		// The fix's changed lines get Rust mutants: hi <= x survives (it
		// returns hi == x), hi >= x makes "above" fail, and only lines the
		// change made are mutated, never its test module.
		fixed := strings.Replace(rustFixed, "x > hi", "hi < x", 1)
		rep := checkHead(t, rustClampRepo(t, map[string]string{
			"src/lib.rs": fixed + rustTestsHead + rustInside + "\n" + rustAbove + "}\n",
		}).dir, true)
		if rep.Verdict != verify.Verified {
			t.Fatalf("verdict %s, want verified: %s", rep.Verdict, describe(rep))
		}
		m := rep.Mutants
		if m == nil || len(m.Mutants) == 0 {
			t.Fatalf("mutation summary %+v: want the mutants of src/lib.rs's changed lines", m)
		}
		killed := 0
		for _, mv := range m.Mutants {
			t.Logf("%s:%d %s %s %s", mv.File, mv.Line, mv.Rewrite(), mv.Verdict, mv.KilledBy)
			if mv.File != "src/lib.rs" || mv.Line > 9 {
				t.Errorf("mutant %+v: only clamp's lines changed", mv)
			}
			if mv.Verdict == "killed" {
				killed++
				if !strings.HasPrefix(mv.KilledBy, "src/lib.rs::tests::") {
					t.Errorf("killed by %q: want a Rust test's target::name", mv.KilledBy)
				}
			}
		}
		if killed == 0 || m.CreditedKills == 0 || m.Survived == 0 {
			t.Errorf("want a mutant killed by the credited test and one surviving: %+v", m)
		}
	})
	t.Run("rewritten expectation in the same file", func(t *testing.T) {
		// A wrong change (values inside the range come back one higher)
		// with the existing test's expectation rewritten to match it: the
		// base's version of the test, run on the head's code, fails.
		wrong := strings.Replace(rustFixed, "    } else {\n        x\n", "    } else {\n        x + 1\n", 1)
		lax := strings.Replace(rustInside, "clamp(5, 0, 10), 5", "clamp(5, 0, 10), 6", 1)
		rep := checkHead(t, rustClampRepo(t, map[string]string{
			"src/lib.rs": wrong + rustTestsHead + lax + "}\n",
		}).dir, false)
		if len(rep.ChangedExpectations) == 0 {
			t.Fatalf("no changed expectation found (verdict %s): %s", rep.Verdict, describe(rep))
		}
		t.Logf("verdict %s, changed expectations %+v", rep.Verdict, rep.ChangedExpectations)
	})
	t.Run("fix", func(t *testing.T) {
		rep := checkHead(t, rustClampRepo(t, map[string]string{
			"src/lib.rs":     rustFixed + rustTestsHead + rustInside + "}\n",
			"tests/clamp.rs": rustIntegration + "\n#[test]\nfn above() {\n    assert_eq!(clamp(15, 0, 10), 10);\n}\n",
		}).dir, false)
		if rep.Verdict != verify.Verified {
			t.Fatalf("verdict %s, want verified: %s", rep.Verdict, describe(rep))
		}
		if ids := creditedIDs(rep); len(ids) != 1 || ids[0] != "rust:tests/clamp.rs:above" {
			t.Errorf("credited %v, want rust:tests/clamp.rs:above", ids)
		}
	})
	t.Run("ignore", func(t *testing.T) {
		ignored := strings.Replace(rustInside, "#[test]\n", "#[test]\n    #[ignore]\n", 1)
		rep := checkHead(t, rustClampRepo(t, map[string]string{"src/lib.rs": rustFixed + rustTestsHead + ignored + "\n" + rustAbove + "}\n"}).dir, false)
		if rep.Verdict != verify.Tampered || !hasTamper(rep, verify.FindingTestSkipped) {
			t.Fatalf("verdict %s, want tampered with %s: %s", rep.Verdict, verify.FindingTestSkipped, describe(rep))
		}
	})
}

// goFixRepo commits a Go module whose Abs is wrong for negative numbers,
// beside extra files, then the fix and its test.
func goFixRepo(t *testing.T, extra map[string]string) *gitRepo {
	t.Helper()
	r := newGitRepo(t)
	files := map[string]string{
		"go.mod":      "module example.com/num\n\ngo 1.22\n",
		"num.go":      "package num\n\nfunc Abs(x int) int {\n\treturn x\n}\n",
		"num_test.go": "package num\n\nimport \"testing\"\n\nfunc TestPositive(t *testing.T) {\n\tif Abs(3) != 3 {\n\t\tt.Fatal(Abs(3))\n\t}\n}\n",
	}
	for p, c := range extra {
		files[p] = c
	}
	r.write(files)
	r.commit("abs")
	r.write(map[string]string{
		"num.go":      "package num\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n",
		"num_test.go": "package num\n\nimport \"testing\"\n\nfunc TestPositive(t *testing.T) {\n\tif Abs(3) != 3 {\n\t\tt.Fatal(Abs(3))\n\t}\n}\n\nfunc TestNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(Abs(-3))\n\t}\n}\n",
	})
	r.commit("abs of negative numbers")
	return r
}

// commandLog is a runner that records the executables it is asked to start.
type commandLog struct {
	sandbox.Runner
	mu   sync.Mutex
	args []string
}

func (l *commandLog) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	l.mu.Lock()
	if len(c.Args) > 0 {
		l.args = append(l.args, c.Args[0])
	}
	l.mu.Unlock()
	return l.Runner.Run(ctx, c)
}

func (l *commandLog) ran(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.args {
		if a == name || strings.HasSuffix(a, "/"+name) {
			return true
		}
	}
	return false
}

// TestGateGoRepositoryWithJavaScript: a Go fix is verified and credited by
// its Go test alone whatever else the repository holds. Without a
// package.json or a Cargo.toml the gate starts neither node nor cargo;
// with a small JavaScript package beside the Go code (one of its tests
// failing on both sides) the JavaScript suite runs and changes nothing.
func TestGateGoRepositoryWithJavaScript(t *testing.T) {
	for name, extra := range map[string]map[string]string{
		"go only": nil,
		"with a js package": {
			"web/package.json":      "{ \"name\": \"web\", \"version\": \"1.0.0\" }\n",
			"web/fmt.js":            "module.exports = { pct: (x) => Math.round(x * 100) + '%' };\n",
			"web/test/fmt.test.js":  "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst { pct } = require('../fmt.js');\ntest('pct', () => { assert.strictEqual(pct(0.5), '50%'); });\ntest('broken', () => { assert.strictEqual(pct(1), '1%'); });\n",
			"tools/build/index.mjs": "export const version = '1';\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if extra != nil {
				testenv.Node(t)
			}
			r := goFixRepo(t, extra)
			once(t, func() string {
				log := &commandLog{Runner: host.New()}
				rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: r.dir, Base: "HEAD~1", Head: "HEAD", Runner: log, NoEvidence: true})
				switch {
				case err != nil:
					return err.Error()
				case rep.Verdict != verify.Verified:
					return fmt.Sprintf("verdict %s, want verified: %s", rep.Verdict, describe(rep))
				}
				if ids := creditedIDs(rep); len(ids) != 1 || ids[0] != "go:.:TestNegative" {
					return fmt.Sprintf("credited %v, want go:.:TestNegative", ids)
				}
				if log.ran("cargo") {
					return fmt.Sprintf("cargo ran in a repository without a Cargo.toml: %v", log.args)
				}
				if ranNode := log.ran("node"); ranNode != (extra != nil) {
					return fmt.Sprintf("node ran: %v, want %v (%v)", ranNode, extra != nil, log.args)
				}
				return ""
			})
		})
	}
}

// TestGateTypeScriptIsNotJudged: node --test runs no TypeScript, so a
// change to a .ts file and its test ends error (unsupported), never green
// or verified.
func TestGateTypeScriptIsNotJudged(t *testing.T) {
	testenv.Node(t)
	r := newGitRepo(t)
	r.write(map[string]string{
		"package.json":      "{ \"name\": \"calc\", \"version\": \"1.0.0\", \"type\": \"module\" }\n",
		"src/calc.ts":       "export function double(x: number): number {\n  return x + x;\n}\n",
		"test/calc.test.ts": "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { double } from '../src/calc.ts';\ntest('double', () => { assert.strictEqual(double(2), 4); });\n",
	})
	r.commit("calc")
	for name, files := range map[string]map[string]string{
		"code":          {"src/calc.ts": "export function double(x: number): number {\n  return 2 * x;\n}\n"},
		"code and test": {"src/calc.ts": "export function double(x: number): number {\n  return 2 * x;\n}\n", "test/calc.test.ts": "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { double } from '../src/calc.ts';\ntest('double', () => { assert.strictEqual(double(2), 4); });\ntest('zero', () => { assert.strictEqual(double(0), 0); });\n"},
	} {
		t.Run(name, func(t *testing.T) {
			r.git("checkout", "-q", "-B", strings.ReplaceAll(name, " ", "-"), "main")
			r.write(files)
			r.commit(name)
			rep := checkHead(t, r.dir, false)
			if rep.Verdict != verify.Error || len(rep.Reasons) == 0 || !strings.Contains(rep.Reasons[0].Message, "TypeScript") {
				t.Fatalf("verdict %s, want error naming TypeScript: %s", rep.Verdict, describe(rep))
			}
			if len(rep.Unsupported) == 0 || rep.Unsupported[0].Path != "src/calc.ts" {
				t.Errorf("unsupported %+v, want src/calc.ts", rep.Unsupported)
			}
		})
	}
}

// TestGateJavaScriptUsesTheCheckoutsPackages: the project imports a
// package the user installed (node_modules, ignored by git, so in no
// snapshot). The gate's runs and the mutants' link the checkout's
// node_modules into each snapshot: the fix is verified, and its mutants
// run (without the link every test fails to load on both sides).
func TestGateJavaScriptUsesTheCheckoutsPackages(t *testing.T) {
	testenv.Node(t)
	r := newGitRepo(t)
	calc := func(above string) string {
		return "const { lower } = require('bounds');\nfunction clamp(x, lo, hi) {\n  if (x < lower(lo)) return lo;\n  if (x > hi) return " + above + ";\n  return x;\n}\nmodule.exports = { clamp };\n"
	}
	r.write(map[string]string{
		".gitignore":        "node_modules/\n",
		"package.json":      "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"dependencies\": { \"bounds\": \"1.0.0\" }\n}\n",
		"calc.js":           calc("x"),
		"test/calc.test.js": jsTestHead + jsInside,
		// Installed, not committed: what npm ci left in the checkout.
		"node_modules/bounds/package.json": "{\n  \"name\": \"bounds\",\n  \"version\": \"1.0.0\",\n  \"main\": \"index.js\"\n}\n",
		"node_modules/bounds/index.js":     "exports.lower = (lo) => lo;\n",
	})
	r.commit("clamp")
	r.write(map[string]string{"calc.js": calc("hi"), "test/calc.test.js": jsTestHead + jsInside + "\n" + jsAbove})
	r.commit("clamp values above the range")
	rep := checkHead(t, r.dir, true)
	if rep.Verdict != verify.Verified {
		t.Fatalf("verdict %s, want verified: %s", rep.Verdict, describe(rep))
	}
	if rep.Mutants == nil || rep.Mutants.CreditedKills == 0 {
		t.Fatalf("no mutant killed by the credited test: %+v", rep.Mutants)
	}
}
