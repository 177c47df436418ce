package golang

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
)

// TestKeyContent: the key leaves out a file's trailing inert declarations
// only when nothing could observe them.
func TestKeyContent(t *testing.T) {
	const code = "package p\n\nfunc Sign(n int) int {\n\tif n > 0 {\n\t\treturn 1\n\t}\n\treturn 0\n}\n"
	const test = "package p\n\nimport \"testing\"\n\nfunc TestSign(t *testing.T) {\n\tif Sign(2) != 1 {\n\t\tt.Fatal(Sign(2))\n\t}\n}\n"
	for _, c := range []struct {
		name, tail, test string
		bits             int
		dropped          bool
	}{
		{"a var from an int literal", "\n// Save is a save.\nvar Save = 1765432100123456789\n", test, 64, true},
		{"consts and a string", "\nconst (\n\tA = \"x\"\n\tB = 100000000000000000000000\n)\n\nvar _ = 2\n", test, 64, true},
		{"only trailing comments", "\n// the end\n", test, 64, true},
		{"an int that does not fit a 32-bit var", "\nvar Save = 1765432100123456789\n", test, 32, false},
		{"a call runs at init", "\nvar Save = println()\n", test, 64, false},
		{"a typed var", "\nvar Save int64 = 1\n", test, 64, false},
		{"a var the code names", "\nvar Sign2 = 1\n", test + "\nvar _ = Sign2\n", 64, false},
		{"a name the package uses from the universe", "\nvar len = 1\n", test + "\nvar _ = len(\"x\")\n", 64, false},
		{"a directive", "\n//go:linkname Save runtime.x\nvar Save = 1\n", test, 64, false},
		{"a test that reads Go sources", "\nvar Save = 1\n", test + "\nvar _, _ = os.ReadFile(\"p.go\")\n", 64, false},
		{"a test that embeds files", "\nvar Save = 1\n", test + "\n//go:embed x\nvar _ string\n", 64, false},
		{"a func", "\nfunc Save() {}\n", test, 64, false},
		{"a method", "\ntype T int\n\nfunc (T) String() string { return \"\" }\n", test, 64, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := []keyFile{{rel: "p.go", data: []byte(code), own: true}, {rel: "p_test.go", data: []byte(c.test)}}
			after := []keyFile{{rel: "p.go", data: []byte(code + c.tail), own: true}, {rel: "p_test.go", data: []byte(c.test)}}
			b, a := keyContent(before, c.bits), keyContent(after, c.bits)
			same := string(a[0].data) == string(b[0].data)
			if same != c.dropped {
				t.Errorf("appending %q: key content the same %v, want %v\nbefore: %q\nafter:  %q", c.tail, same, c.dropped, b[0].data, a[0].data)
			}
			if string(a[1].data) != c.test {
				t.Errorf("the test file's key content changed: %q", a[1].data)
			}
		})
	}
	// Two files appending the same name: the package does not build, and
	// its key must differ from the one before.
	two := []keyFile{
		{rel: "a.go", data: []byte(code + "\nvar Save = 1\n"), own: true},
		{rel: "b.go", data: []byte("package p\n\nfunc B() {}\n\nvar Save = 2\n"), own: true},
	}
	if got := keyContent(two, 64); string(got[0].data) != string(two[0].data) {
		t.Errorf("a name declared twice was left out of the key: %q", got[0].data)
	}
	// A file that is not the package's own (a dependency's) keeps all.
	dep := []keyFile{{rel: "q/q.go", data: []byte(code + "\nvar Save = 1\n")}}
	if got := keyContent(dep, 64); string(got[0].data) != string(dep[0].data) {
		t.Errorf("a dependency's declarations were left out of the key: %q", got[0].data)
	}
}

// signRepo is a one-package module whose change has a mutant only
// TestTagged (a test file built under the tag "bcodetag") kills: n > 0's
// boundary n >= 0.
func signRepo(t *testing.T) (string, *verify.Change) {
	testenv.Go(t)
	testenv.Git(t)
	const head = "package sign\n\nfunc Sign(n int) int {\n\tif n > 0 {\n\t\treturn 1\n\t}\n\treturn 0\n}\n"
	dir := filepath.Join(t.TempDir(), "repo")
	change := mutatetest.MakeRepoFiles(t, dir, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n", "sign/sign.go": "package sign\n\nfunc Sign(n int) int { return 0 }\n",
	}, map[string]string{
		"sign/sign.go":      head,
		"sign/sign_test.go": "package sign\n\nimport \"testing\"\n\nfunc TestSign(t *testing.T) {\n\tif Sign(5) != 1 {\n\t\tt.Fatal(Sign(5))\n\t}\n}\n",
		"sign/tagged_test.go": "//go:build bcodetag\n\npackage sign\n\nimport \"testing\"\n\n" +
			"func TestTagged(t *testing.T) {\n\tif Sign(0) != 0 {\n\t\tt.Fatal(Sign(0))\n\t}\n}\n",
	})
	return dir, change
}

// boundaryVerdict is the verdict of Sign's n >= 0 mutant in rep.
func boundaryVerdict(t *testing.T, rep *mutate.Report) mutate.Mutant {
	t.Helper()
	for _, m := range rep.Mutants {
		if m.Operator == mutate.OpConditionalBoundary && m.Mutated == "n >= 0" {
			return m
		}
	}
	t.Fatalf("no n >= 0 mutant in %+v", rep.Mutants)
	return mutate.Mutant{}
}

// TestBaselineNeverFromAnotherEnvironment: a kept baseline (and the schema
// binary built with it) is taken only for the same package content, the
// same go settings and the same runner. Another GOFLAGS builds another
// test binary (here with one more test, which kills a mutant the others
// miss), and another runner (a container of another image) may answer
// otherwise; one that cannot name what its commands see shares nothing.
func TestBaselineNeverFromAnotherEnvironment(t *testing.T) {
	dir, change := signRepo(t)
	cache := t.TempDir()
	run := func(r sandbox.Runner) *mutate.Report {
		t.Helper()
		rep, err := runGo(context.Background(), r, dir, change, mutate.Options{Workers: 2, CacheDir: cache}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	t.Setenv("GOFLAGS", "")
	if m := boundaryVerdict(t, run(host.New())); m.Verdict != mutate.Survived {
		t.Fatalf("without the tag: n >= 0 %s, want survived (no test calls Sign(0))", m.Verdict)
	}
	t.Setenv("GOFLAGS", "-tags=bcodetag")
	rep := run(host.New())
	if rep.Stats.BaselineCached != 0 || rep.Stats.SchemaCached != 0 {
		t.Errorf("another GOFLAGS took the kept baseline or schema binary: stats %+v", rep.Stats)
	}
	if m := boundaryVerdict(t, rep); m.Verdict != mutate.Killed || m.KilledBy != "TestTagged" {
		t.Errorf("with the tag: n >= 0 %s by %q, want killed by TestTagged", m.Verdict, m.KilledBy)
	}
	if rep := run(host.New()); rep.Stats.BaselineCached != 1 {
		t.Errorf("the same settings again did not take the kept baseline: stats %+v", rep.Stats)
	}
	for i, c := range []struct {
		id     string
		cached int
	}{{"image a", 0}, {"image b", 0}, {"image a", 1}, {"", 0}, {"", 0}} {
		if rep := run(otherRunner{host.New(), c.id}); rep.Stats.BaselineCached != c.cached {
			t.Errorf("run %d, a runner named other with identity %q: %d baselines from the cache, want %d", i, c.id, rep.Stats.BaselineCached, c.cached)
		}
	}
}

// otherRunner is the host under another name, as a container runner is,
// with id as what its commands see ("": it cannot say).
type otherRunner struct {
	sandbox.Runner
	id string
}

func (otherRunner) Name() string { return "other" }

func (r otherRunner) Identity(context.Context) (string, error) {
	if r.id == "" {
		return "", errors.New("a writable build cache")
	}
	return r.id, nil
}

// TestSaveAppendingADeclarationKeepsTheBaseline: a save that appends a
// declaration nothing reads keeps the per-test baseline (its processes do
// not run again) and every verdict; a save whose declaration the tests can
// see runs the baseline again.
func TestSaveAppendingADeclarationKeepsTheBaseline(t *testing.T) {
	dir, change := signRepo(t)
	cache := t.TempDir()
	file := filepath.Join(dir, "sign", "sign.go")
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	run := func(appended string) *mutate.Report {
		t.Helper()
		if err := os.WriteFile(file, append(append([]byte(nil), orig...), appended...), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := runGo(context.Background(), host.New(), dir, change, mutate.Options{Workers: 2, CacheDir: cache}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	first := run("")
	saved := run("\n// BcodeSave1 is a save.\nvar BcodeSave1 = 1765432100123456789\n")
	if saved.Stats.BaselineCached != 1 || saved.Stats.SchemaCached != 0 {
		t.Errorf("save appending an inert declaration: stats %+v, want the baseline kept and the schema built", saved.Stats)
	}
	if len(saved.Mutants) != len(first.Mutants) {
		t.Fatalf("%d mutants after the save, %d before", len(saved.Mutants), len(first.Mutants))
	}
	for i, m := range first.Mutants {
		if o := saved.Mutants[i]; o.ID != m.ID || o.Verdict != m.Verdict || o.KilledBy != m.KilledBy {
			t.Errorf("%s:%d %q: %s by %q, after the save %s by %q", m.File, m.Line, m.Mutated, m.Verdict, m.KilledBy, o.Verdict, o.KilledBy)
		}
	}
	// Sign's tests call it: a declaration that shadows nothing but is
	// named in the package is not inert.
	if rep := run("\nvar Sign2 = 1\n\nfunc init() { _ = Sign2 }\n"); rep.Stats.BaselineCached != 0 {
		t.Errorf("a save adding code that runs at init kept the baseline: stats %+v", rep.Stats)
	}
}
