package golang

import (
	"context"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

const baseTests = `package calc

import (
	"fmt"
	"testing"
)

// TestAdd checks addition.
func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("1+2")
	}
}

func TestTable(t *testing.T) {
	setup := 1
	t.Run("small numbers", func(t *testing.T) {
		if Add(setup, 1) != 2 {
			t.Fatal("small")
		}
	})
	t.Run("big", func(t *testing.T) {
		if Add(1000, 1) != 1001 {
			t.Fatal("big")
		}
	})
	t.Run("big", func(t *testing.T) {})
}

func BenchmarkAdd(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Add(1, 2)
	}
}

func TestMain(m *testing.M) { m.Run() }

func TestHelper(x int) {}

func ExampleAdd() {
	fmt.Println(Add(1, 2))
	// Output: 3
}

func ExampleNoOutput() {
	fmt.Println(Add(1, 2))
}

func FuzzAdd(f *testing.F) {
	f.Fuzz(func(t *testing.T, a int) { Add(a, 1) })
}
`

func TestChangedTests(t *testing.T) {
	a := New()
	ctx := context.Background()
	cases := []struct {
		name string
		head string
		want []string
	}{
		{"identical", baseTests, nil},
		{"comment and layout only",
			strings.NewReplacer(
				"// TestAdd checks addition.", "// TestAdd checks that addition works.",
				"t.Fatal(\"1+2\")", "t.Fatal(\"1+2\") // must hold\n\n",
				"if Add(1, 2) != 3 {", "if Add(1,2) != 3 { /* spaced */",
				"setup := 1", "setup := 1;",
			).Replace(baseTests), nil},
		{"new test",
			baseTests + "\nfunc TestSub(t *testing.T) { _ = Sub(2, 1) }\n",
			[]string{"./calc:TestSub"}},
		{"modified test", strings.Replace(baseTests, "Add(1, 2) != 3", "Add(2, 2) != 4", 1),
			[]string{"./calc:TestAdd"}},
		{"changed subtest only (name rewritten)", strings.Replace(baseTests, "Add(setup, 1) != 2", "Add(setup, 2) != 3", 1),
			[]string{"./calc:TestTable/small_numbers"}},
		{"changed duplicate subtest gets go test's #01", strings.Replace(baseTests, `t.Run("big", func(t *testing.T) {})`, `t.Run("big", func(t *testing.T) { t.Log() })`, 1),
			[]string{"./calc:TestTable/big#01"}},
		{"new subtest", strings.Replace(baseTests, `t.Run("big", func(t *testing.T) {})`, `t.Run("big", func(t *testing.T) {})
	t.Run("zero", func(t *testing.T) { _ = Add(0, 0) })`, 1),
			[]string{"./calc:TestTable/zero"}},
		{"subtest and shared setup changed: whole test", strings.NewReplacer("setup := 1", "setup := 2", "Add(setup, 1) != 2", "Add(setup, 1) != 3").Replace(baseTests),
			[]string{"./calc:TestTable"}},
		{"example output changed", strings.Replace(baseTests, "// Output: 3", "// Output: 4", 1),
			[]string{"./calc:ExampleAdd"}},
		{"example without output is not run", strings.Replace(baseTests, "fmt.Println(Add(1, 2))\n}", "fmt.Println(Add(5, 2))\n}", 1), nil},
		{"example gains output", strings.Replace(baseTests, "fmt.Println(Add(1, 2))\n}", "fmt.Println(Add(1, 2))\n\t// Output: 3\n}", 1),
			[]string{"./calc:ExampleNoOutput"}},
		{"benchmark, TestMain and non-tests are not tests", strings.NewReplacer("Add(1, 2)\n\t}", "Add(9, 2)\n\t}", "m.Run()", "m.Run(); m.Run()", "func TestHelper(x int) {}", "func TestHelper(x int) { x++ }").Replace(baseTests), nil},
		{"fuzz target", strings.Replace(baseTests, "Add(a, 1)", "Add(a, 2)", 1),
			[]string{"./calc:FuzzAdd"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := a.ChangedTests(ctx, changeOf(fileChange("calc/calc_test.go", baseTests, c.head)))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(names(got), ",") != strings.Join(c.want, ",") {
				t.Fatalf("got %v, want %v", names(got), c.want)
			}
			for _, g := range got {
				if g.Language != "go" || g.File != "calc/calc_test.go" {
					t.Errorf("test %+v: wrong language or file", g)
				}
			}
		})
	}
}

func TestChangedTestsAcrossFiles(t *testing.T) {
	a := New()
	ctx := context.Background()
	moved := "package p\nimport \"testing\"\nfunc TestMoved(t *testing.T) { t.Log(1) }\n"
	other := "package p\nimport \"testing\"\nfunc TestOther(t *testing.T) {}\n"

	t.Run("test moved unchanged to another file is not new", func(t *testing.T) {
		got, err := a.ChangedTests(ctx, changeOf(
			fileChange("p/a_test.go", moved, ""),
			fileChange("p/b_test.go", other, other+"func TestMoved(t *testing.T) {\n\tt.Log(1)\n}\n"),
		))
		if err != nil || len(got) != 0 {
			t.Fatalf("got %v, %v; want nothing", names(got), err)
		}
	})
	t.Run("root package, sorted by ID, binary and non-test files skipped", func(t *testing.T) {
		bin := fileChange("z/bin_test.go", "", "package z\nfunc TestB(t *testing.T) {}\n")
		bin.Binary = true
		got, err := a.ChangedTests(ctx, changeOf(
			fileChange("z_test.go", "", "package m\nimport \"testing\"\nfunc TestZ(t *testing.T) {}\nfunc TestA(t *testing.T) {}\n"),
			fileChange("a/x_test.go", "", "package a\nimport tt \"testing\"\nfunc TestX(t *tt.T) {}\n"),
			fileChange("a/x.go", "", "package a\nfunc TestNotInTestFile(t *testing.T) {}\n"),
			bin,
		))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"./a:TestX", ".:TestA", ".:TestZ"}
		if strings.Join(names(got), ",") != strings.Join(want, ",") {
			t.Fatalf("got %v, want %v", names(got), want)
		}
	})
	t.Run("base that does not parse: every head test is new", func(t *testing.T) {
		got, err := a.ChangedTests(ctx, changeOf(fileChange("p/a_test.go", "package p\nfunc TestMoved( {", moved)))
		if err != nil || strings.Join(names(got), ",") != "./p:TestMoved" {
			t.Fatalf("got %v, %v", names(got), err)
		}
	})
	t.Run("head that does not parse: an error naming file and line", func(t *testing.T) {
		_, err := a.ChangedTests(ctx, changeOf(fileChange("p/a_test.go", moved, "package p\n\nimport \"testing\"\nfunc TestMoved(t *testing.T) {\n")))
		if err == nil || !strings.Contains(err.Error(), "p/a_test.go:4") {
			t.Fatalf("err = %v, want one naming p/a_test.go:4", err)
		}
	})
	t.Run("fixtures under testdata, vendor, _ and . directories are not tests", func(t *testing.T) {
		var fcs []verify.FileChange
		for _, p := range []string{"p/testdata/x_test.go", "vendor/v/x_test.go", "_old/x_test.go", ".cache/x_test.go"} {
			fcs = append(fcs, fileChange(p, "", moved))
		}
		got, err := a.ChangedTests(ctx, changeOf(fcs...))
		if err != nil || len(got) != 0 {
			t.Fatalf("got %v, %v", names(got), err)
		}
	})
	t.Run("deleted file lists nothing", func(t *testing.T) {
		got, err := a.ChangedTests(ctx, changeOf(fileChange("p/a_test.go", moved, "")))
		if err != nil || len(got) != 0 {
			t.Fatalf("got %v, %v", names(got), err)
		}
	})
	t.Run("nil change", func(t *testing.T) {
		if _, err := a.ChangedTests(ctx, nil); err == nil {
			t.Fatal("no error for a nil change")
		}
	})
}

func TestSubtestNames(t *testing.T) {
	for in, want := range map[string]string{
		"one two":    "one_two",
		"tab\there":  "tab_here",
		"nbsp\u00a0": "nbsp_",
		"bell\a":     `bell\a`,
		"é ok":       "é_ok",
		"a/b":        "a/b",
	} {
		if got := rewriteSubtestName(in); got != want {
			t.Errorf("rewrite(%q) = %q, want %q", in, got, want)
		}
	}
	n := newSubtestNamer()
	var got []string
	for _, s := range []string{"x", "x", "", "", "x#01", "x"} {
		got = append(got, n.unique(s))
	}
	// What go test itself names these (checked against testing.T.Run).
	want := []string{"x", "x#01", "#00", "#01", "x#01#01", "x#02"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("unique names %v, want %v", got, want)
	}
}

// TestSubtestNamesMatchGoTest checks the names ChangedTests predicts for
// static subtests against the names go test reports for them.
func TestSubtestNamesMatchGoTest(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	src := "package p\nimport \"testing\"\nfunc TestNames(t *testing.T) {\n" +
		"\tt.Run(\"x\", func(t *testing.T) {})\n\tt.Run(\"x\", func(t *testing.T) {})\n" +
		"\tt.Run(\"\", func(t *testing.T) {})\n\tt.Run(\"x#01\", func(t *testing.T) {})\n" +
		"\tt.Run(\"sp ace\\tand\\u00a0more\", func(t *testing.T) {})\n\tt.Run(\"bell\\a\", func(t *testing.T) {})\n}\n"
	dir := writeTree(t, map[string]string{"go.mod": goMod, "p/p_test.go": src})
	f, err := parseTestFile("p/p_test.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var predicted []verify.Test
	for _, st := range f.Tests[0].Subtests {
		predicted = append(predicted, verify.Test{Language: "go", Package: "./p", Name: "TestNames/" + st.Name})
	}
	res, err := New().RunTests(context.Background(), r, dir, predicted, verify.RunOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != verify.Pass {
			t.Errorf("%s: %s (%s): go test named it differently", r.Test.Name, r.Outcome, r.Detail)
		}
	}
	if len(res) != 6 {
		t.Fatalf("%d results for 6 subtests", len(res))
	}
}
