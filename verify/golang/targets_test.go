package golang

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// graphModule: base ← mid ← top (non-test imports), user's external test
// imports mid, loner imports nothing, tool/sub is a nested module.
var graphModule = map[string]string{
	"go.mod":                goMod,
	"base/base.go":          "package base\n\nfunc One() int { return 1 }\n",
	"base/base_test.go":     "package base\n\nimport \"testing\"\n\nfunc TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal()\n\t}\n}\n",
	"mid/mid.go":            "package mid\n\nimport \"example.com/m/base\"\n\nfunc Two() int { return base.One() * 2 }\n",
	"top/top.go":            "package top\n\nimport \"example.com/m/mid\"\n\nfunc Four() int { return mid.Two() * 2 }\n",
	"top/top_test.go":       "package top\n\nimport \"testing\"\n\nfunc TestFour(t *testing.T) {\n\tif Four() != 4 {\n\t\tt.Fatal(Four())\n\t}\n}\n",
	"user/user.go":          "package user\n",
	"user/user_x_test.go":   "package user_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/mid\"\n)\n\nfunc TestUses(t *testing.T) { _ = mid.Two() }\n",
	"loner/loner.go":        "package loner\n\nfunc Z() {}\n",
	"loner/testdata/in.txt": "golden\n",
	"tool/go.mod":           "module example.com/tool\n\ngo 1.26\n",
	"tool/sub/sub.go":       "package sub\n\nfunc S() int { return 1 }\n",
	"tool/sub/sub_test.go":  "package sub\n\nimport \"testing\"\n\nfunc TestS(t *testing.T) {}\n",
}

func TestTargets(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	dir := writeTree(t, graphModule)
	a := New()
	ctx := context.Background()
	src := func(p string) string { return graphModule[p] }
	cases := []struct {
		name  string
		files []verify.FileChange
		want  []string
	}{
		{"reverse closure across three packages, test imports included",
			[]verify.FileChange{fileChange("base/base.go", src("base/base.go"), "package base\n\nfunc One() int { return 2 - 1 }\n")},
			[]string{"./base", "./mid", "./top", "./user"}},
		{"a test file change reaches only its package",
			[]verify.FileChange{fileChange("mid/mid_test.go", "", "package mid\n")},
			[]string{"./mid"}},
		{"a top package reaches no one else",
			[]verify.FileChange{fileChange("top/top.go", src("top/top.go"), src("top/top.go")+"\n// x\n")},
			[]string{"./top"}},
		{"testdata belongs to its package",
			[]verify.FileChange{fileChange("loner/testdata/in.txt", "golden\n", "golden 2\n")},
			[]string{"./loner"}},
		{"go.mod reaches the whole module (not the nested one)",
			[]verify.FileChange{fileChange("go.mod", goMod, goMod+"\n")},
			[]string{"./base", "./loner", "./mid", "./top", "./user"}},
		{"nested module",
			[]verify.FileChange{fileChange("tool/sub/sub.go", src("tool/sub/sub.go"), "package sub\n\nfunc S() int { return 2 }\n")},
			[]string{"./tool/sub"}},
		{"a deleted package reaches its importers",
			[]verify.FileChange{fileChange("gone/gone.go", "package gone\n", "")},
			nil},
		{"non-Go change reaches nothing",
			[]verify.FileChange{fileChange("README.md", "a", "b")},
			nil},
	}
	for _, c := range cases {
		got, err := a.Targets(ctx, r, dir, changeOf(c.files...))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}

	// A test of the nested module runs from that module's root.
	res, err := a.RunTests(ctx, r, dir, goTests("./tool/sub", "TestS"), verify.RunOptions{Count: 1, Timeout: time.Minute})
	if err != nil || len(res) != 1 || res[0].Outcome != verify.Pass {
		t.Fatalf("RunTests in a nested module: %+v %v", res, err)
	}

	// Deleting a package its importers still name: they are targeted.
	del := writeTree(t, map[string]string{
		"go.mod":       goMod,
		"keep/keep.go": "package keep\n\nimport \"example.com/m/gone\"\n\nvar _ = gone.X\n",
		"other/o.go":   "package other\n",
	})
	got, err := a.Targets(ctx, r, del, changeOf(fileChange("gone/gone.go", "package gone\n\nvar X = 1\n", "")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "./keep" {
		t.Errorf("deleted package: got %v, want [./keep]", got)
	}
}

func TestTargetsWorkspace(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	dir := writeTree(t, map[string]string{
		"go.work":         "go 1.26\n\nuse (\n\t./lib\n\t./app // the app\n)\n",
		"lib/go.mod":      "module example.com/lib\n\ngo 1.26\n",
		"lib/lib.go":      "package lib\n\nfunc L() int { return 1 }\n",
		"app/go.mod":      "module example.com/app\n\ngo 1.26\n\nrequire example.com/lib v0.0.0\n",
		"app/app.go":      "package app\n\nimport \"example.com/lib\"\n\nvar V = lib.L()\n",
		"app/app_test.go": "package app\n\nimport \"testing\"\n\nfunc TestV(t *testing.T) {\n\tif V != 1 {\n\t\tt.Fatal(V)\n\t}\n}\n",
		"stray/go.mod":    "module example.com/stray\n\ngo 1.26\n",
		"stray/s.go":      "package stray\n",
	})
	var notes []string
	a := &Adapter{Progress: recorder{&notes}}
	got, err := a.Targets(context.Background(), r, dir, changeOf(fileChange("lib/lib.go", "package lib\n", "package lib\n\nfunc L() int { return 1 }\n")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "./app ./lib" {
		t.Logf("notes: %q", notes)
		t.Errorf("workspace: got %v, want [./app ./lib]", got)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "stray is not used by go.work") {
		t.Errorf("the module outside go.work was skipped silently: %q", notes)
	}

	// The tests of a workspace module run in workspace mode, even with a
	// GOFLAGS=-mod=mod the go command refuses there.
	res, err := a.RunTests(context.Background(), r, dir, goTests("./app", "TestV"), verify.RunOptions{Count: 1, Timeout: time.Minute})
	if err != nil || len(res) != 1 || res[0].Outcome != verify.Pass {
		t.Fatalf("RunTests in a workspace: %+v %v", res, err)
	}
	suite, err := a.RunSuite(context.Background(), r, dir, nil, time.Minute)
	if err != nil || suite.Outcome != verify.Pass || strings.Join(suite.Targets, " ") != "./app/... ./lib/..." {
		t.Fatalf("RunSuite in a workspace: %+v %v", suite, err)
	}
}

type recorder struct{ notes *[]string }

func (r recorder) Step(format string, args ...any) {
	*r.notes = append(*r.notes, fmt.Sprintf(format, args...))
}

func TestRunSuite(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	a := New()
	ctx := context.Background()
	// One passing tree shared by the subtests that only read it, so its
	// packages compile once.
	passing := writeTree(t, graphModule)

	t.Run("pass, whole suite across modules", func(t *testing.T) {
		t.Parallel()
		dir := passing
		res, err := a.RunSuite(ctx, r, dir, nil, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != verify.Pass || strings.Join(res.Targets, " ") != "./... ./tool/..." {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("targets in the root and a nested module", func(t *testing.T) {
		t.Parallel()
		dir := passing
		res, err := a.RunSuite(ctx, r, dir, []string{"./top", "./tool/sub"}, time.Minute)
		if err != nil || res.Outcome != verify.Pass {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("fail names the failing tests", func(t *testing.T) {
		t.Parallel()
		files := map[string]string{}
		for k, v := range graphModule {
			files[k] = v
		}
		files["mid/mid.go"] = "package mid\n\nimport \"example.com/m/base\"\n\nfunc Two() int { return base.One() * 3 }\n"
		dir := writeTree(t, files)
		res, err := a.RunSuite(ctx, r, dir, []string{"./top", "./base"}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != verify.Fail || strings.Join(res.Failed, " ") != "example.com/m/top.TestFour" || !strings.Contains(res.Detail, "6") {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("build error names the package", func(t *testing.T) {
		t.Parallel()
		files := map[string]string{}
		for k, v := range graphModule {
			files[k] = v
		}
		files["mid/mid.go"] = "package mid\n\nfunc Two() int { return missing() }\n"
		dir := writeTree(t, files)
		res, err := a.RunSuite(ctx, r, dir, nil, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != verify.BuildError || !strings.Contains(res.Detail, "undefined: missing") {
			t.Fatalf("%+v", res)
		}
		for _, want := range []string{"example.com/m/mid", "example.com/m/top"} {
			if !strings.Contains(strings.Join(res.Failed, " "), want) {
				t.Errorf("Failed %v lacks %s", res.Failed, want)
			}
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		dir := writeTree(t, runModule)
		res, err := a.RunSuite(ctx, r, dir, []string{"./slow"}, time.Second)
		if err != nil || res.Outcome != verify.Timeout {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("no go.mod: nothing to run", func(t *testing.T) {
		t.Parallel()
		dir := writeTree(t, map[string]string{"main.py": "print(1)\n"})
		res, err := a.RunSuite(ctx, r, dir, nil, time.Minute)
		if err != nil || res.Outcome != verify.Pass || len(res.Targets) != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("go missing", func(t *testing.T) {
		t.Parallel()
		dir := passing
		res, err := (&Adapter{GoBin: "go-not-installed-here"}).RunSuite(ctx, r, dir, nil, time.Minute)
		if err != nil || res.Outcome != verify.EnvError || !strings.Contains(res.Detail, "https://go.dev/dl") {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("bad target", func(t *testing.T) {
		t.Parallel()
		dir := passing
		if _, err := a.RunSuite(ctx, r, dir, []string{"../elsewhere"}, time.Minute); err == nil {
			t.Fatal("no error for a target outside the repository")
		}
	})
}

func TestFindModulesIgnoresVendorAndTestdata(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"go.mod":                     goMod,
		"vendor/x/go.mod":            "module x\n",
		"a/testdata/m/go.mod":        "module m\n",
		".hidden/go.mod":             "module h\n",
		"_skip/go.mod":               "module s\n",
		"nested/deeper/inner/go.mod": "module inner\n",
	})
	l, err := findModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(l.Roots, " ") != ". nested/deeper/inner" || l.Workspace {
		t.Fatalf("%+v", l)
	}
	if _, err := findModules(filepath.Join(dir, "does-not-exist")); err == nil {
		t.Fatal("no error for a missing directory")
	}
	if err := os.WriteFile(filepath.Join(dir, "go.work"), []byte("go 1.26\nuse .\nuse \"/abs/elsewhere\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = findModules(dir)
	if err != nil || !l.Workspace || strings.Join(l.Roots, " ") != "." || len(l.Skipped) != 2 {
		t.Fatalf("%+v %v", l, err)
	}
}

// TestRunSuiteRunsTheTests: the suite is run, never recalled from go's test
// cache. Two snapshots with the same content under GOFLAGS=-trimpath (which a
// user may set; it makes their test binaries identical) each run the test:
// it appends a line to a file per run. Without -count=1 the second suite
// run printed "(cached)" and the gate judged a result it never saw.
func TestRunSuiteRunsTheTests(t *testing.T) {
	needGo(t)
	marker := filepath.Join(t.TempDir(), "runs")
	files := map[string]string{
		"go.mod": goMod,
		"m_test.go": "package m\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestRuns(t *testing.T) {\n\tf, err := os.OpenFile(" +
			fmt.Sprintf("%q", marker) + ", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)\n\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n\tf.WriteString(\"run\\n\")\n\tf.Close()\n}\n",
	}
	r := &host.Runner{Extra: []string{"GOFLAGS=-mod=mod -trimpath", "GOPROXY=off", "GOTOOLCHAIN=local"}}
	a := New()
	for i := range 2 {
		res, err := a.RunSuite(context.Background(), r, writeTree(t, files), nil, time.Minute)
		if err != nil || res.Outcome != verify.Pass {
			t.Fatalf("suite %d: %+v %v", i, res, err)
		}
	}
	data, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "run\n"); n != 2 {
		t.Errorf("the test ran %d times in two suite runs, want 2 (a result came from go's test cache)", n)
	}
}
