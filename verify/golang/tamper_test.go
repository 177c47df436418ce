package golang

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

const tamperBase = `package p

import (
	"fmt"
	"testing"
)

func TestKeep(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("math")
	}
}

func TestGuarded(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Run("case", func(t *testing.T) {})
}

func FuzzParse(f *testing.F) { f.Fuzz(func(t *testing.T, s string) {}) }

func ExampleHello() {
	fmt.Println("hi")
	// Output: hi
}
`

func finding(fs []verify.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code+" "+f.Path+":"+itoa(f.Line))
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func TestTamper(t *testing.T) {
	a := New()
	ctx := context.Background()
	otherOS := "windows"
	if runtime.GOOS == "windows" {
		otherOS = "linux"
	}
	cases := []struct {
		name  string
		files []verify.FileChange
		want  []string // code path:line
		msg   string   // a fragment of the first finding's message
	}{
		{"a real change is not tamper",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "1+1 != 2", "2+2 != 4", 1))},
			nil, ""},
		{"deleted test",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "func TestKeep(t *testing.T) {\n\tif 1+1 != 2 {\n\t\tt.Fatal(\"math\")\n\t}\n}\n", "", 1))},
			[]string{"test_deleted p/p_test.go:-"}, "test TestKeep (base line 8) was deleted from package ./p"},
		{"deleted file: every test, fuzz target and example",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, "")},
			[]string{"test_deleted p/p_test.go:-", "test_deleted p/p_test.go:-", "test_deleted p/p_test.go:-", "test_deleted p/p_test.go:-"}, "example ExampleHello"},
		{"moved to another changed file of the package is not deleted",
			[]verify.FileChange{
				fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "func FuzzParse(f *testing.F) { f.Fuzz(func(t *testing.T, s string) {}) }", "", 1)),
				fileChange("p/fuzz_test.go", "", "package p\n\nimport \"testing\"\n\nfunc FuzzParse(f *testing.F) { f.Fuzz(func(t *testing.T, s string) {}) }\n"),
			},
			nil, ""},
		{"t.Skip added",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "\tif 1+1 != 2 {", "\tt.Skip(\"flaky\")\n\tif 1+1 != 2 {", 1))},
			[]string{"test_skipped p/p_test.go:9"}, `TestKeep now skips: t.Skip("flaky") was added`},
		{"t.SkipNow in a subtest",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, `t.Run("case", func(t *testing.T) {})`, `t.Run("case", func(t *testing.T) { t.SkipNow() })`, 1))},
			[]string{"test_skipped p/p_test.go:18"}, "TestGuarded now skips: t.SkipNow()"},
		{"a Skip method of something else is not a skip",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "\tif 1+1 != 2 {", "\tvar r skipper\n\tr.Skip(3)\n\tif 1+1 != 2 {", 1))},
			nil, ""},
		{"t.Skipf in a fuzz body",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "f.Fuzz(func(t *testing.T, s string) {})", "f.Fuzz(func(tt *testing.T, s string) { tt.Skipf(\"no %s\", s) })", 1))},
			[]string{"test_skipped p/p_test.go:21"}, "FuzzParse now skips"},
		{"testing.Short guard added",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "\tif 1+1 != 2 {", "\tif testing.Short() {\n\t\treturn\n\t}\n\tif 1+1 != 2 {", 1))},
			[]string{"test_skipped p/p_test.go:9"}, "testing.Short() was added"},
		{"existing skip moved or reworded keeps its count: not tamper",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "if testing.Short() {\n\t\tt.Skip(\"long\")\n\t}", "if testing.Short() { t.Skip(\"long\") }", 1))},
			nil, ""},
		{"a new test that skips is not tamper (it is just not credited)",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, tamperBase+"\nfunc TestNew(t *testing.T) { t.Skip() }\n")},
			nil, ""},
		{"build constraint added",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, "//go:build integration\n\n"+tamperBase)},
			[]string{"test_skipped p/p_test.go:1"}, `TestKeep, TestGuarded, FuzzParse, ExampleHello are no longer built by default: the build constraint "//go:build integration" excludes it`},
		{"constraint that still builds here is not tamper",
			[]verify.FileChange{fileChange("p/p_test.go", tamperBase, "//go:build "+runtime.GOOS+"\n\n"+tamperBase)},
			nil, ""},
		{"moved into a file for another GOOS",
			[]verify.FileChange{
				fileChange("p/p_test.go", tamperBase, "package p\n"),
				fileChange("p/p_"+otherOS+"_test.go", "", tamperBase),
			},
			[]string{"test_skipped p/p_" + otherOS + "_test.go:8"}, "its file name limits it to another GOOS/GOARCH"},
		{"replace directive added and changed; removed is fine",
			[]verify.FileChange{fileChange("go.mod",
				"module m\n\ngo 1.26\n\nreplace example.com/a => ../a\nreplace example.com/gone => ../gone\n",
				"module m\n\ngo 1.26\n\nreplace example.com/a => ../a2 // moved\n\nreplace (\n\texample.com/b v1.0.0 => example.com/fork v1.0.1\n)\n")},
			[]string{"test_infra_changed go.mod:5", "test_infra_changed go.mod:8"}, "replace directive changed: example.com/a => ../a2 (was => ../a)"},
		{"testdata golden rewritten alongside a deleted assertion is not tamper",
			[]verify.FileChange{
				fileChange("p/testdata/golden.txt", "old\n", "new\n"),
				fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "\tif 1+1 != 2 {\n\t\tt.Fatal(\"math\")\n\t}\n", "", 1)),
			},
			nil, ""},
		{"a new external test file reaching an unexported variable with go:linkname",
			[]verify.FileChange{fileChange("p/link_test.go", "", "package p_test\n\nimport _ \"unsafe\"\n\n//go:linkname impl example.com/m/p.impl\nvar impl func(int) int\n\nfunc init() { impl = func(x int) int { return x } }\n")},
			[]string{"test_infra_changed p/link_test.go:5"}, "//go:linkname impl example.com/m/p.impl"},
		{"a go:linkname the base's test file had already is not new",
			[]verify.FileChange{fileChange("p/link_test.go", "package p_test\n\n//go:linkname impl example.com/m/p.impl\nvar impl func(int) int\n", "package p_test\n\n// moved\n//go:linkname impl example.com/m/p.impl\nvar impl func(int) int\n")},
			nil, ""},
		{"code that asks whether it runs in a test binary",
			[]verify.FileChange{
				fileChange("p/p.go", "package p\n\nfunc Abs(x int) int { return x }\n", "package p\n\nimport \"testing\"\n\nfunc Abs(x int) int {\n\tif x < 0 && testing.Testing() {\n\t\treturn -x\n\t}\n\treturn x\n}\n"),
				fileChange("q/q.go", "", "package q\n\nimport (\n\t\"os\"\n\t\"strings\"\n)\n\nvar inTest = strings.HasSuffix(os.Args[0], \".test\")\n"),
				fileChange("r/r.go", "", "package r\n\nimport \"flag\"\n\nvar verbose = flag.Lookup(\"test.v\") != nil\n"),
			},
			[]string{"test_infra_changed p/p.go:6", "test_infra_changed q/q.go:8", "test_infra_changed r/r.go:5"}, "asks whether it runs in a test binary (testing.Testing())"},
		{"a test file may call testing.Testing, and a testdata file is not code",
			[]verify.FileChange{
				fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "\tif 1+1 != 2 {", "\tif !testing.Testing() {\n\t\tt.Fatal(\"?\")\n\t}\n\tif 1+1 != 2 {", 1)),
				fileChange("p/testdata/x.go", "", "package x\n\nimport \"testing\"\n\nvar _ = testing.Testing()\n"),
			},
			nil, ""},
		{"a test file's init sets a variable the change's code starts reading",
			[]verify.FileChange{
				fileChange("p/p.go", "package p\n\nfunc Abs(x int) int { return x }\n", "package p\n\nimport \"os\"\n\nfunc Abs(x int) int {\n\tif x < 0 && os.Getenv(\"P_SIGNED\") == \"1\" {\n\t\treturn -x\n\t}\n\treturn x\n}\n"),
				fileChange("p/zz_test.go", "", "package p\n\nimport \"os\"\n\nfunc init() {\n\tos.Setenv(\"P_SIGNED\", \"1\")\n}\n"),
			},
			[]string{"test_infra_changed p/zz_test.go:6"}, "init sets P_SIGNED before any test runs"},
		{"t.Setenv in a test, or setup of a variable the code does not start reading, is not",
			[]verify.FileChange{
				fileChange("p/p.go", "package p\n\nfunc Abs(x int) int { return x }\n", "package p\n\nimport \"os\"\n\nfunc Abs(x int) int {\n\tif x < 0 && os.Getenv(\"P_SIGNED\") == \"1\" {\n\t\treturn -x\n\t}\n\treturn x\n}\n"),
				fileChange("p/p_test.go", tamperBase, strings.Replace(tamperBase, "\tif 1+1 != 2 {", "\tt.Setenv(\"P_SIGNED\", \"1\")\n\tif 1+1 != 2 {", 1)),
				fileChange("p/main_test.go", "", "package p\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tos.Setenv(\"TZ\", \"UTC\")\n\tos.Exit(m.Run())\n}\n"),
			},
			nil, ""},
		{"binary test file",
			[]verify.FileChange{{Path: "p/x_test.go", Status: verify.Added, Head: []byte{0, 1, 2}, Binary: true}},
			[]string{"binary_test_file p/x_test.go:-"}, "binary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, err := a.Tamper(ctx, changeOf(c.files...))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(finding(fs), ",") != strings.Join(c.want, ",") {
				t.Fatalf("findings %v, want %v (%+v)", finding(fs), c.want, fs)
			}
			if c.msg != "" && !strings.Contains(fs[0].Message, c.msg) {
				t.Errorf("message %q lacks %q", fs[0].Message, c.msg)
			}
		})
	}
	if _, err := a.Tamper(ctx, changeOf(fileChange("p/p_test.go", tamperBase, "package p\nfunc {"))); err == nil {
		t.Error("a head that does not parse gave no error")
	}
}
