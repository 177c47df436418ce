package golang

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// The runner attacks: a broken fix (Add multiplies) whose production code
// makes the test binary report the change's failing test as passed. Each
// makes plain `go test` pass; none may make the gate verify the change.

const (
	attackBaseCode = "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n\n// Mul multiplies.\nfunc Mul(a, b int) int { return a * b }\n"
	attackBroken   = "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a * b }\n\n// Mul multiplies.\nfunc Mul(a, b int) int { return a * b }\n"
	attackMulTest  = "package calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal(\"mul\")\n\t}\n}\n"
	attackAddTest  = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n"
)

// forgeFrames prints test2json-framed passes for the tests -test.run
// selects and exits with the given call: no branch, no comparison, so the
// changed lines have no mutant for the credit rule to ask a kill of.
const forgeFrames = `package calc

import (
	"os"
	"regexp"
	"strings"
	"syscall"
)

func runFlag() string {
	var run string
	for _, a := range os.Args {
		v, ok := strings.CutPrefix(a, "-test.run=")
		run = map[bool]string{false: run, true: v}[ok]
	}
	return run
}

func forge() {
	re := regexp.MustCompile(runFlag())
	var b strings.Builder
	for _, n := range []string{"TestMul", "TestAdd"} {
		b.WriteString(map[bool]string{true: "\x16=== RUN   " + n + "\n\x16--- PASS: " + n + " (0.00s)\n"}[re.MatchString(n)])
	}
	b.WriteString("\x16PASS\n")
	os.Stdout.WriteString(b.String())
	EXIT
}

func init() {
	map[bool]func(){true: forge, false: func() {}}[strings.Contains(strings.Join(os.Args, " "), "-test.")]()
}
`

// rewriteStdout puts a pipe in place of the binary's standard output and
// copies what the testing package writes with every FAIL made a PASS; the
// tests run and m.Run returns 1.
const rewriteStdout = `package calc

import (
	"bufio"
	"os"
	"strings"
)

func init() {
	r, w, _ := os.Pipe()
	out := os.Stdout
	os.Stdout = w
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			out.WriteString(strings.ReplaceAll(sc.Text(), "FAIL", "PASS") + "\n")
		}
	}()
}
`

// narrowRun drops the change's test from the selection before m.Run parses
// its flags, and prints its pass itself.
const narrowRun = `package calc

import (
	"os"
	"strings"
)

func init() {
	for i, a := range os.Args {
		if strings.HasPrefix(a, "-test.run=") {
			os.Args[i] = "-test.run=^TestMul$"
		}
	}
	os.Stdout.WriteString("\x16=== RUN   TestAdd\n\x16--- PASS: TestAdd (0.00s)\n")
}
`

var goRunnerAttacks = []struct {
	name  string
	files map[string]string // added to the head beside the broken fix and TestAdd
	plain bool              // plain go test passes with the attack (armed)
}{
	{"frames then exit 0", map[string]string{"calc/report.go": strings.Replace(forgeFrames, "EXIT", "syscall.Exit(0)", 1)}, true},
	{"frames then exit 1", map[string]string{"calc/report.go": strings.Replace(forgeFrames, "EXIT", "syscall.Exit(1)", 1)}, false},
	{"frames then os.Exit 0 from init", map[string]string{"calc/report.go": strings.Replace(forgeFrames, "EXIT", "_ = syscall.Exit\n\tos.Exit(0)", 1)}, true},
	{"stdout rewritten through a pipe", map[string]string{"calc/report.go": rewriteStdout}, false},
	{"selection narrowed in init", map[string]string{"calc/report.go": narrowRun}, false},
	{"own TestMain that exits 0", map[string]string{"calc/main_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tm.Run()\n\tos.Exit(0)\n}\n"}, true},
}

func TestGateGoRunnerAttacks(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	base := map[string]string{"go.mod": goMod, "calc/calc.go": attackBaseCode, "calc/calc_test.go": attackMulTest}
	for _, c := range goRunnerAttacks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			head := map[string]string{"go.mod": goMod, "calc/calc.go": attackBroken, "calc/calc_test.go": attackMulTest, "calc/add_test.go": attackAddTest}
			changes := []verify.FileChange{fileChange("calc/calc.go", attackBaseCode, attackBroken), fileChange("calc/add_test.go", "", attackAddTest)}
			for p, body := range c.files {
				head[p] = body
				changes = append(changes, fileChange(p, "", body))
			}
			if c.plain {
				cmd := exec.Command("go", "test", "-count=1", "./...")
				cmd.Dir = writeTree(t, head)
				cmd.Env = append(cmd.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("control: plain go test fails with the attack; it is not armed\n%s", out)
				}
			}
			rep := gateCheck(t, r, base, head, changes)
			if rep.Verdict == verify.Verified || len(rep.Credited()) > 0 {
				t.Fatalf("verdict %s, credited %+v: the broken fix must not be verified\ntests %+v", rep.Verdict, rep.Credited(), rep.Tests)
			}
		})
	}
}

// TestGateGoOwnTestMainStillVerified: packages with a TestMain of their
// own (os.Exit(m.Run()), one returning m.Run's code through a helper
// variable, one that returns) and external tests only keep their
// verdicts under bcode's TestMain.
func TestGateGoOwnTestMainStillVerified(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	fixed := strings.Replace(attackBaseCode, "a - b", "a + b", 1)
	xAdd := "package calc_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/calc\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif calc.Add(2, 3) != 5 {\n\t\tt.Fatal(calc.Add(2, 3))\n\t}\n}\n"
	cases := []struct {
		name  string
		extra map[string]string // on both sides
		add   map[string]string // the change's test file(s)
		mod   string            // go.mod when not goMod
	}{
		{"os.Exit(m.Run())", map[string]string{"calc/main_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tos.Exit(m.Run())\n}\n"}, map[string]string{"calc/add_test.go": attackAddTest}, ""},
		{"code through a variable", map[string]string{"calc/main_test.go": "package calc\n\nimport (\n\tgoos \"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tcode := m.Run()\n\tgoos.Exit(code)\n}\n"}, map[string]string{"calc/add_test.go": attackAddTest}, ""},
		{"os.Exit in a helper TestMain calls", map[string]string{"calc/main_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { run(m) }\n\nfunc run(m *testing.M) { os.Exit(m.Run()) }\n"}, map[string]string{"calc/add_test.go": attackAddTest}, ""},
		{"TestMain that returns", map[string]string{"calc/main_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestMain(m *testing.M) {\n\tm.Run()\n}\n"}, map[string]string{"calc/add_test.go": attackAddTest}, ""},
		{"external tests only", map[string]string{"calc/calc_test.go": strings.Replace(attackMulTest, "package calc\n\nimport \"testing\"\n", "package calc_test\n\nimport (\n\t\"testing\"\n\n\t. \"example.com/m/calc\"\n)\n", 1)}, map[string]string{"calc/add_test.go": xAdd}, ""},
		// bcode's TestMain is compiled at the module's language version
		// (CI: Masterminds/semver says go 1.12, where 0o600 does not build).
		{"a module at go 1.12", nil, map[string]string{"calc/add_test.go": attackAddTest}, "module example.com/m\n\ngo 1.12\n"},
		{"a module at go 1.12 with its own TestMain", map[string]string{"calc/main_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tos.Exit(m.Run())\n}\n"}, map[string]string{"calc/add_test.go": attackAddTest}, "module example.com/m\n\ngo 1.12\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			mod := goMod
			if c.mod != "" {
				mod = c.mod
			}
			base := map[string]string{"go.mod": mod, "calc/calc.go": attackBaseCode, "calc/calc_test.go": attackMulTest}
			head := map[string]string{"go.mod": mod, "calc/calc.go": fixed, "calc/calc_test.go": attackMulTest}
			for p, body := range c.extra {
				base[p], head[p] = body, body
			}
			changes := []verify.FileChange{fileChange("calc/calc.go", attackBaseCode, fixed)}
			for p, body := range c.add {
				head[p] = body
				changes = append(changes, fileChange(p, "", body))
			}
			rep := gateCheck(t, r, base, head, changes)
			if rep.Verdict != verify.Verified {
				t.Fatalf("verdict %s, want verified: %+v\ntamper %+v", rep.Verdict, rep.Tests, rep.Tamper)
			}
		})
	}
}

// TestGateGoUnplacedPackageTakesNoPass: a package where bcode cannot place
// its TestMain (here: a file already named as bcode's) has its passes not
// taken, so printed passes cannot count there either.
func TestGateGoUnplacedPackageTakesNoPass(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	base := map[string]string{"go.mod": goMod, "calc/calc.go": attackBaseCode, "calc/calc_test.go": attackMulTest}
	head := map[string]string{"go.mod": goMod, "calc/calc.go": attackBroken, "calc/calc_test.go": attackMulTest, "calc/add_test.go": attackAddTest,
		"calc/report.go":       strings.Replace(forgeFrames, "EXIT", "syscall.Exit(0)", 1),
		"calc/" + gateMainFile: "package calc\n"}
	var changes []verify.FileChange
	for _, p := range []string{"calc/calc.go", "calc/add_test.go", "calc/report.go", "calc/" + gateMainFile} {
		changes = append(changes, fileChange(p, base[p], head[p]))
	}
	rep := gateCheck(t, r, base, head, changes)
	if rep.Verdict == verify.Verified || len(rep.Credited()) > 0 {
		t.Fatalf("verdict %s, credited %+v: the broken fix must not be verified\ntests %+v", rep.Verdict, rep.Credited(), rep.Tests)
	}
}

// gateCheck runs the gate with the Go adapter on the change from base to
// head.
func gateCheck(t *testing.T, r sandbox.Runner, base, head map[string]string, changes []verify.FileChange) *verify.Report {
	t.Helper()
	change := changeOf(changes...)
	change.Workspace = treeWorkspace{t: t, base: base, head: head}
	g := &verify.Gate{Runner: r, Adapters: []verify.Adapter{New()}}
	rep, err := g.Check(context.Background(), change, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
