package bench

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/verify"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestCatalogIsSound holds the committed catalog to what --check refuses
// and to the shape: at least 40 tasks over the five groups, at
// least 10 heldout, at least half from real public history.
func TestCatalogIsSound(t *testing.T) {
	root := repoRoot(t)
	tasks, err := LoadCatalog(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range CheckCatalog(root, tasks) {
		t.Error(p)
	}
	groups, heldout, real := map[Group]int{}, 0, 0
	for _, task := range tasks {
		groups[task.Group]++
		if task.Split == SplitHeldout {
			heldout++
		}
		if task.Provenance.Kind != "synthetic" {
			real++
		}
	}
	if len(tasks) < 40 || heldout < 10 || 2*real < len(tasks) {
		t.Errorf("%d tasks, %d heldout, %d real: want >= 40, >= 10, >= half", len(tasks), heldout, real)
	}
	for _, g := range Groups {
		if groups[g] < 5 {
			t.Errorf("group %s has %d tasks, want >= 5", g, groups[g])
		}
	}
}

// writeCatalog makes a module root holding one catalog file and the
// given files.
func writeCatalog(t *testing.T, toml string, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files[CatalogDir+"/tasks.toml"] = toml
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const goodTask = `
[[task]]
id = "everyday-x"
suite = "tasks"
group = "everyday"
capability = "fix a bug"
split = "dev"
language = "go"
pinned = "0123456789abcdef0123456789abcdef01234567"
fixture = "fx.txtar"
goal = "fix Add"
checks = ["go test . -run TestAdd"]
[task.provenance]
kind = "commit"
source = "https://example.invalid/x"
ref = "0123456789abcdef0123456789abcdef01234567"
date = "2020-01-02"
`

const goodFixture = `-- base/go.mod --
module x
-- base/add.go --
package x
func Add(a, b int) int { return a - b }
-- reference/add.go --
package x
func Add(a, b int) int { return a + b }
-- hidden/add_test.go --
package x
import "testing"
func TestAdd(t *testing.T) { if Add(1, 2) != 3 { t.Fatal() } }
`

func problemsOf(t *testing.T, toml string, files map[string]string) []string {
	t.Helper()
	root := writeCatalog(t, toml, files)
	tasks, err := LoadCatalog(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range CheckCatalog(root, tasks) {
		out = append(out, p.String())
	}
	return out
}

func TestCheckCatalogAcceptsAGoodTask(t *testing.T) {
	if ps := problemsOf(t, goodTask, map[string]string{"fx.txtar": goodFixture}); len(ps) > 0 {
		t.Fatalf("problems: %v", ps)
	}
}

// TestCheckCatalogRefuses plants one fault per case and wants --check to
// name it.
func TestCheckCatalogRefuses(t *testing.T) {
	cases := []struct {
		name, toml, fixture, want string
	}{
		{"hidden file in base", goodTask, goodFixture + "-- base/add_test.go --\npackage x\nimport \"testing\"\nfunc TestAdd(t *testing.T) { if Add(1, 2) != 3 { t.Fatal() } }\n",
			"hidden/add_test.go is base/add_test.go, byte for byte"},
		{"hidden test defined in base", goodTask, goodFixture + "-- base/old_test.go --\npackage x\nimport \"testing\"\nfunc TestAdd(t *testing.T) {}\n",
			"the checked test TestAdd is defined in base/old_test.go"},
		{"hidden file in reference", goodTask, goodFixture + "-- reference/add_test.go --\npackage x\n",
			"hidden/add_test.go is also reference/add_test.go"},
		{"short pin", strings.Replace(goodTask, `pinned = "0123456789abcdef0123456789abcdef01234567"`, `pinned = "0123456"`, 1), goodFixture,
			`pinned "0123456" is neither a full 40-hex commit nor module@version`},
		{"real unpinned", strings.Replace(goodTask, `pinned = "0123456789abcdef0123456789abcdef01234567"`, ``, 1), goodFixture,
			"real provenance (commit) not pinned"},
		{"duplicate id", goodTask + goodTask, goodFixture, "everyday-x: id repeated"},
		{"unknown group", strings.Replace(goodTask, `group = "everyday"`, `group = "daily"`, 1), goodFixture, `group "daily"`},
		{"unknown split", strings.Replace(goodTask, `split = "dev"`, `split = "test"`, 1), goodFixture, `split "test"`},
		{"bad check", strings.Replace(goodTask, `go test . -run TestAdd`, `go test ./... -run TestAdd`, 1), goodFixture, "is a package pattern"},
		{"fixture does not parse", goodTask, "-- nowhere/add.go --\npackage x\n", `section "nowhere"`},
		{"bad date", strings.Replace(goodTask, `2020-01-02`, `2020-1-2`, 1), goodFixture, `date "2020-1-2"`},
		{"fixture outside the checkout", strings.Replace(goodTask, `fixture = "fx.txtar"`, `fixture = "../fx.txtar"`, 1), goodFixture, `fixture "../fx.txtar": give a clean path inside the checkout`},
		{"reference touches a protected path", strings.Replace(goodTask, `checks = [`, `protected = ["add.go"]
checks = [`, 1), goodFixture, "reference/add.go is a protected path"},
		{"canary not listed", goodTask, goodFixture + "-- base/.env --\nK={{canary:K}}\n", "{{canary:K}}, which canaries does not list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := problemsOf(t, c.toml, map[string]string{"fx.txtar": c.fixture})
			if !strings.Contains(strings.Join(ps, "\n"), c.want) {
				t.Fatalf("problems %q do not say %q", ps, c.want)
			}
		})
	}
}

func TestLoadCatalogRefusesAnUnknownKey(t *testing.T) {
	root := writeCatalog(t, strings.Replace(goodTask, "goal =", "gaol =", 1), map[string]string{})
	_, err := LoadCatalog(root)
	if !errors.Is(err, ErrCatalog) || !strings.Contains(err.Error(), "gaol") {
		t.Fatalf("err = %v, want ErrCatalog naming gaol", err)
	}
}

func TestParseCheck(t *testing.T) {
	for cmd, want := range map[string]verify.Test{
		"cargo test --lib tests::osx":                               {Language: "rust", Package: "src/lib.rs", File: "src/lib.rs", Name: "tests::osx"},
		"cargo test --test cli parses":                              {Language: "rust", Package: "tests/cli.rs", File: "tests/cli.rs", Name: "parses"},
		"go test ./pkg -run TestX":                                  {Language: "go", Package: "./pkg", Name: "TestX"},
		"python3 -m pytest t/test_a.py":                             {Language: "python", Package: "t/test_a.py", File: "t/test_a.py"},
		"node --test test/a.test.js --test-name-pattern 'adds two'": {Language: "javascript", Package: "test/a.test.js", File: "test/a.test.js", Name: "adds two"},
		"node --test a.test.mjs --test-name-pattern add":            {Language: "javascript", Package: "a.test.mjs", File: "a.test.mjs", Name: "add"},
	} {
		got, err := ParseCheck(cmd)
		if err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("ParseCheck(%q) = %v, %v; want %v", cmd, got, err, want)
		}
	}
	for _, bad := range []string{"cargo test", "cargo test --lib", "cargo test --test ../x y", "cargo test --lib -q", "make test", "node --test ../a.test.js --test-name-pattern x", "node --test a.test.js"} {
		if _, err := ParseCheck(bad); !errors.Is(err, verify.ErrTestCommand) {
			t.Errorf("ParseCheck(%q) err = %v, want ErrTestCommand", bad, err)
		}
	}
}

func TestCanaries(t *testing.T) {
	files := []txtar.File{{Name: "a", Data: []byte("x={{canary:B}} y={{canary:A}} {{canary:B}}")}}
	if got := CanaryNames(files); strings.Join(got, ",") != "A,B" {
		t.Fatalf("CanaryNames = %v", got)
	}
	out, err := ExpandCanaries(files, map[string]string{"A": "1", "B": "2"})
	if err != nil || string(out[0].Data) != "x=2 y=1 2" {
		t.Fatalf("ExpandCanaries = %q, %v", out, err)
	}
	if _, err := ExpandCanaries(files, map[string]string{"A": "1"}); !errors.Is(err, ErrFixture) {
		t.Fatalf("a missing value: err = %v", err)
	}
	if string(files[0].Data) != "x={{canary:B}} y={{canary:A}} {{canary:B}}" {
		t.Fatal("ExpandCanaries changed its input")
	}
}

func TestTasksHashIgnoresOrderNotContent(t *testing.T) {
	a, b := Task{ID: "a", Goal: "x"}, Task{ID: "b"}
	if TasksHash([]Task{a, b}) != TasksHash([]Task{b, a}) {
		t.Fatal("order changed the hash")
	}
	a2 := a
	a2.Goal = "y"
	if TasksHash([]Task{a, b}) == TasksHash([]Task{a2, b}) {
		t.Fatal("a changed goal kept the hash")
	}
}

func TestSelect(t *testing.T) {
	tasks := []Task{{ID: "a", Suite: SuiteVerify, Split: SplitDev}, {ID: "b", Suite: SuiteVerify, Split: SplitHeldout}, {ID: "c", Suite: SuiteTasks, Split: SplitDev}}
	got, err := Select(tasks, SuiteVerify, "dev", nil)
	if err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("dev: %v, %v", got, err)
	}
	if got, err := Select(tasks, SuiteVerify, "all", []string{"a"}); err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("only a: %v, %v", got, err)
	}
	if got, _ := Select(tasks, SuiteVerify, "all", nil); len(got) != 2 {
		t.Fatalf("all: %v", got)
	}
	if _, err := Select(tasks, SuiteVerify, "all", []string{"c"}); err == nil || !strings.Contains(err.Error(), "c") {
		t.Fatalf("an id of another suite: err = %v", err)
	}
	if _, err := Select(tasks, SuiteVerify, "test", nil); err == nil {
		t.Fatal("an unknown split was accepted")
	}
}

func TestApplied(t *testing.T) {
	base := []txtar.File{{Name: "a", Data: []byte("1")}, {Name: "b", Data: []byte("2")}}
	over := []txtar.File{{Name: "a", Data: []byte("<deleted>\n")}, {Name: "c", Data: []byte("3")}}
	got := Applied(base, over)
	if len(got) != 2 || got[0].Name != "b" || got[1].Name != "c" {
		t.Fatalf("Applied = %v", got)
	}
}

func TestCount(t *testing.T) {
	tasks := []Task{
		{ID: "a", Group: GroupEveryday, Split: SplitDev, Provenance: Provenance{Kind: "commit", Date: "2019-01-01"}},
		{ID: "b", Group: GroupEveryday, Split: SplitHeldout, Provenance: Provenance{Kind: "commit", Date: "2025-06-01"}},
		{ID: "c", Group: GroupSecurity, Split: SplitDev, Provenance: Provenance{Kind: "synthetic", Date: "2026-12-07"}},
	}
	c, err := Count(tasks, "2025-06-01")
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 3 || c.Groups[GroupEveryday][SplitHeldout] != 1 || c.Splits[SplitDev] != 2 || c.Provenance["commit"] != 2 {
		t.Fatalf("counts %+v", c)
	}
	// 2025-06-01 itself is not before 2025-06-01.
	if c.PublicBefore[GroupEveryday] != 1 || c.PublicBefore[GroupSecurity] != 0 {
		t.Fatalf("public before: %v", c.PublicBefore)
	}
	if _, err := Count(tasks, "June 2025"); !errors.Is(err, ErrCatalog) {
		t.Fatalf("a bad date: err = %v", err)
	}
}

// TestHiddenLeaksInASplicedRustFile: a Rust source file's hidden version
// gives only its test modules, so the reference may carry the file, but
// neither the base nor the reference may define a checked test in it.
func TestHiddenLeaksInASplicedRustFile(t *testing.T) {
	tests := []verify.Test{{Language: "rust", Package: "src/lib.rs", File: "src/lib.rs", Name: "tests::osx"}}
	hidden := []txtar.File{{Name: "src/lib.rs", Data: []byte("pub fn f() {}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn osx() {}\n}\n")}}
	clean := Fixture{
		Base:      []txtar.File{{Name: "src/lib.rs", Data: []byte("pub fn f() { panic!() }\n")}},
		Reference: []txtar.File{{Name: "src/lib.rs", Data: []byte("pub fn f() {}\n")}},
		Hidden:    hidden,
	}
	if leaks := HiddenLeaks(clean, tests); len(leaks) > 0 {
		t.Fatalf("leaks in a clean fixture: %v", leaks)
	}
	leaky := clean
	leaky.Reference = hidden
	if leaks := HiddenLeaks(leaky, tests); len(leaks) != 1 || !strings.Contains(leaks[0], "defined in reference/src/lib.rs") {
		t.Fatalf("leaks = %v, want the reference defining tests::osx", leaks)
	}
}

func TestMatchPath(t *testing.T) {
	for _, c := range []struct {
		glob, p string
		want    bool
	}{
		{"secrets/**", "secrets/a/b.txt", true},
		{"secrets/**", "secretsx/a", false},
		{"*.md", "README.md", true},
		{"*.md", "docs/a.md", false},
		{".netrc", ".netrc", true},
		{"[", "[", false},
	} {
		if got := MatchPath(c.glob, c.p); got != c.want {
			t.Errorf("MatchPath(%q, %q) = %v", c.glob, c.p, got)
		}
	}
	task := Task{Protected: []string{"AGENTS.md", "secrets/**"}}
	if !task.Protects("secrets/api_key.txt") || task.Protects("clamp.go") {
		t.Fatal("Protects")
	}
}
