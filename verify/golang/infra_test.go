package golang

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
)

// The attacks of issue 32 item 2: a test file the change adds swaps, before
// any test runs, a package variable the code under test calls for a
// correct copy, and the change breaks the code behind it. The base's test
// of that code passes on the head only because of the new file. Each head
// also carries a real fix with a new test that fails on the base, so a
// gate that runs the base's tests with the head's new files (or not at all)
// calls the change verified.

// infraBase is the code under test: Abs and Sign call package variables
// (one unexported, one exported), and Max has a bug the heads fix.
var infraBase = map[string]string{
	"go.mod": goMod,
	"calc/calc.go": `package calc

var absImpl = func(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// SignImpl computes Sign; callers may swap it.
var SignImpl = func(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func Abs(x int) int  { return absImpl(x) }
func Sign(x int) int { return SignImpl(x) }

func Max(a, b int) int {
	if a > b {
		return b
	}
	return a
}
`,
	"calc/calc_test.go": `package calc

import "testing"

func TestAbs(t *testing.T) {
	if Abs(-2) != 2 || Abs(3) != 3 {
		t.Fatalf("Abs(-2) = %d, Abs(3) = %d", Abs(-2), Abs(3))
	}
}

func TestSign(t *testing.T) {
	if Sign(-5) != -1 || Sign(0) != 0 || Sign(7) != 1 {
		t.Fatal("Sign")
	}
}
`,
}

// maxFixed replaces calc.go's Max with a correct one; brokenAbs and
// brokenSign break the code behind the variables.
func headCalc(brokenAbs, brokenSign bool) string {
	src := infraBase["calc/calc.go"]
	src = strings.Replace(src, "\tif a > b {\n\t\treturn b\n\t}\n\treturn a", "\tif a > b {\n\t\treturn a\n\t}\n\treturn b", 1)
	if brokenAbs {
		src = strings.Replace(src, "\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x", "\treturn x", 1)
	}
	if brokenSign {
		src = strings.Replace(src, "\tcase x < 0:\n\t\treturn -1\n", "", 1)
	}
	return src
}

// maxTest is the fix's own new test file: it fails on the base.
const maxTest = "package calc\n\nimport \"testing\"\n\nfunc TestMax(t *testing.T) {\n\tif Max(2, 5) != 5 {\n\t\tt.Fatal(Max(2, 5))\n\t}\n}\n"

const correctAbs = "func(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}"

// gateOnRepo commits base then base with head written over it in a real
// repository, runs the whole gate with this adapter on HEAD~1..HEAD, and
// returns the report and the repository (checked out at the head).
func gateOnRepo(t *testing.T, base, head map[string]string) (*verify.Report, *testrepo.Repo) {
	t.Helper()
	runner := newRunner(t)
	r := testrepo.FromFiles(t, base)
	r.Write(head)
	r.Commit("head")
	ctx := context.Background()
	repo, err := git.Open(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	change, err := gitchange.Load(ctx, repo, "HEAD~1", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = change.Workspace.Close() })
	g := &verify.Gate{Runner: runner, Adapters: []verify.Adapter{New()}}
	rep, err := g.Check(ctx, change, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	return rep, r
}

// plainGoTestPasses is the arming control: a plain `go test ./...` on the
// head passes, so the attack fools anyone who only runs the tests.
func plainGoTestPasses(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("control: plain go test on the head fails, so the attack would not fool it: %v\n%s", err, out)
	}
}

func TestGateTestFileSwapsAPackageVariable(t *testing.T) {
	t.Parallel()
	attacks := []struct {
		name      string
		head      map[string]string
		file      string // the added file the finding must name
		what      string // what it must say the file assigns
		sign      bool   // the attack breaks Sign (exported) rather than Abs
		failsTest string
	}{
		{"init in a new test file", map[string]string{
			"calc/zz_test.go": "package calc\n\nfunc init() {\n\tabsImpl = " + correctAbs + "\n}\n",
		}, "calc/zz_test.go", "init assigns absImpl", false, "TestAbs"},
		{"a package variable's initializer in a new test file", map[string]string{
			"calc/zz_test.go": "package calc\n\nvar _ = func() int {\n\tabsImpl = " + correctAbs + "\n\treturn 0\n}()\n",
		}, "calc/zz_test.go", "a package variable's initializer assigns absImpl", false, "TestAbs"},
		{"export_test.go hands the variable to an external test file", map[string]string{
			"calc/export_test.go": "package calc\n\nvar SetAbs = func(f func(int) int) { absImpl = f }\n",
			"calc/helper_test.go": "package calc_test\n\nimport \"example.com/m/calc\"\n\nvar _ = func() bool {\n\tcalc.SetAbs(" + correctAbs + ")\n\treturn true\n}()\n",
		}, "calc/export_test.go", "", false, "TestAbs"},
		{"TestMain swaps before m.Run", map[string]string{
			"calc/main_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tabsImpl = " + correctAbs + "\n\tos.Exit(m.Run())\n}\n",
		}, "calc/main_test.go", "TestMain assigns absImpl", false, "TestAbs"},
		{"an external test package swaps an exported variable", map[string]string{
			"calc/sign_ext_test.go": "package calc_test\n\nimport \"example.com/m/calc\"\n\nfunc init() {\n\tcalc.SignImpl = func(x int) int {\n\t\tswitch {\n\t\tcase x < 0:\n\t\t\treturn -1\n\t\tcase x > 0:\n\t\t\treturn 1\n\t\t}\n\t\treturn 0\n\t}\n}\n",
		}, "calc/sign_ext_test.go", "init assigns calc.SignImpl", true, "TestSign"},
	}
	for _, c := range attacks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			head := map[string]string{"calc/calc.go": headCalc(!c.sign, c.sign), "calc/max_test.go": maxTest}
			for p, src := range c.head {
				head[p] = src
			}
			rep, r := gateOnRepo(t, infraBase, head)
			plainGoTestPasses(t, r.Dir)
			if rep.Verdict != verify.Tampered || !reportHas(rep, verify.ReasonChangedExpectations) {
				t.Fatalf("verdict %s, want tampered (changed_expectations)\nreasons %+v\nchanged %+v\ntests %+v", rep.Verdict, rep.Reasons, rep.ChangedExpectations, rep.Tests)
			}
			found := false
			for _, f := range rep.ChangedExpectations {
				if strings.Contains(f.Message, c.failsTest) && strings.Contains(f.Message, c.file) && strings.Contains(f.Message, c.what) && strings.Contains(f.Message, "(blocks verified)") {
					found = true
				}
			}
			if !found {
				t.Fatalf("no blocking changed expectation names %s, %s and %q: %+v", c.failsTest, c.file, c.what, rep.ChangedExpectations)
			}
		})
	}
}

// TestGateNewTestFileWithAHarmlessInitIsVerified: a real fix whose new
// test file has ordinary tests and an init that sets up only the tests'
// own state (rows of a table, a seed) is verified: the base's tests pass
// on the head with the base's test files alone.
func TestGateNewTestFileWithAHarmlessInitIsVerified(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		head map[string]string
	}{
		{"init fills the file's own table", map[string]string{
			"calc/calc.go": headCalc(false, false),
			"calc/max_test.go": "package calc\n\nimport \"testing\"\n\nvar maxCases [][3]int\n\nfunc init() {\n\tmaxCases = append(maxCases, [3]int{2, 5, 5}, [3]int{7, 1, 7})\n}\n\n" +
				"func TestMax(t *testing.T) {\n\tfor _, c := range maxCases {\n\t\tif got := Max(c[0], c[1]); got != c[2] {\n\t\t\tt.Fatalf(\"Max(%d, %d) = %d\", c[0], c[1], got)\n\t\t}\n\t}\n}\n",
		}},
		{"a new TestMain that only sets the environment", map[string]string{
			"calc/calc.go":      headCalc(false, false),
			"calc/max_test.go":  maxTest,
			"calc/main_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tos.Setenv(\"CALC_TEST\", \"1\")\n\tos.Exit(m.Run())\n}\n",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep, _ := gateOnRepo(t, infraBase, c.head)
			if rep.Verdict != verify.Verified || len(rep.ChangedExpectations) > 0 {
				t.Fatalf("verdict %s, want verified with no changed expectation\nreasons %+v\nchanged %+v\ntests %+v", rep.Verdict, rep.Reasons, rep.ChangedExpectations, rep.Tests)
			}
		})
	}
}

func TestDescribeSetup(t *testing.T) {
	a := New()
	cases := []struct{ src, want string }{
		{"package calc\n\nfunc init() { absImpl = nil }\n", "init assigns absImpl"},
		{"package calc_test\n\nimport \"x/calc\"\n\nfunc init() { calc.Now = nil; *calc.P = 1 }\n", "init assigns calc.Now, calc.P"},
		{"package calc\n\nvar cases []int\n\nfunc init() { cases = append(cases, 1); x := 2; x = 3; _ = x }\n", ""},
		{"package calc\n\nfunc TestMain(m *testing.M) { clock = fake; os.Exit(m.Run()) }\n", "TestMain assigns clock"},
		{"package calc\n\nvar _ = func() int { absImpl = nil; return 0 }()\n", "a package variable's initializer assigns absImpl"},
		{"package calc\n\nfunc TestX(t *testing.T) { absImpl = nil }\n", ""}, // inside a test: its own business
	}
	for _, c := range cases {
		if got := a.DescribeSetup("calc/x_test.go", []byte(c.src)); got != c.want {
			t.Errorf("DescribeSetup(%q) = %q, want %q", c.src, got, c.want)
		}
	}
	if got := a.DescribeSetup("calc/x.go", []byte(cases[0].src)); got != "" {
		t.Errorf("a production file described: %q", got)
	}
}

// TestGateRewrittenExampleOutputIsNamed: a person's change breaks Abs and
// rewrites ExampleAbs's // Output: to match. The documented policy
// credits the rewritten Example (it fails on the base, passes on the
// head), and the report says plainly that the base's expected output
// fails against the head: a changed_expectations entry naming it, shown
// by bcode check's text under "changed expectations".
func TestGateRewrittenExampleOutputIsNamed(t *testing.T) {
	t.Parallel()
	example := func(out string) string {
		return "package calc\n\nimport \"fmt\"\n\nfunc ExampleAbs() {\n\tfmt.Println(Abs(-2))\n\t// Output: " + out + "\n}\n"
	}
	base := map[string]string{"go.mod": goMod, "calc/calc.go": absFixed, "calc/example_test.go": example("2")}
	rep, _ := gateOnRepo(t, base, map[string]string{"calc/calc.go": absBuggy, "calc/example_test.go": example("-2")})
	found := false
	for _, f := range rep.ChangedExpectations {
		if strings.Contains(f.Message, "ExampleAbs passed on the base; the base's version fails against the head") {
			found = true
		}
	}
	if !found {
		t.Fatalf("verdict %s: no changed expectation names ExampleAbs: %+v", rep.Verdict, rep.ChangedExpectations)
	}
}
