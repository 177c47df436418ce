package rust

import (
	"testing"

	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/adaptertest"
)

// TestConformance runs the language-adapter conformance suite against the
// Rust adapter with Cargo fixtures (no dependencies: there is no registry).
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Language{
		Adapter:  newAdapter(),
		Runner:   newRunner(t),
		Require:  needCargo,
		Foreign:  "tools/gen.py",
		Outcomes: rustOutcomes,
		Change:   rustChange,
		Suite: adaptertest.Suite{
			Passing: map[string]string{"Cargo.toml": cargoToml, "src/lib.rs": libRs + unitTests("2")},
			Failing: map[string]string{"Cargo.toml": cargoToml, "src/lib.rs": libRs + unitTests("3")},
		},
	})
}

func rustTest(unit, file, name string) verify.Test {
	return verify.Test{Language: "rust", Package: unit, File: file, Name: name}
}

const cargoToml = "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"

const libRs = "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n"

func unitTests(want string) string {
	return "\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn adds() {\n        assert_eq!(add(1, 1), " + want + ");\n    }\n}\n"
}

var rustOutcomes = adaptertest.Outcomes{
	Files: map[string]string{
		"Cargo.toml": cargoToml,
		"src/lib.rs": libRs + "\npub fn parse(s: &str) -> i64 {\n    panic!(\"cannot parse {}\", s)\n}\n",
		"tests/calc.rs": `use calc::{add, parse};

#[test]
fn passes() {
    assert_eq!(add(1, 2), 3);
}

#[test]
fn asserts() {
    assert_eq!(add(2, 2), 5, "add(2, 2)");
}

#[test]
fn panics() {
    parse("x");
}

#[test]
#[ignore = "not on this machine"]
fn skipped() {}

// Rust's table tests: a macro writes one test fn per row.
macro_rules! table {
    ($($name:ident: $a:expr, $b:expr, $want:expr;)*) => {
        mod table {
            $(
                #[test]
                fn $name() {
                    assert_eq!(calc::add($a, $b), $want);
                }
            )*
        }
    };
}

table! {
    one_plus_one: 1, 1, 2;
    wrong: 1, 1, 3;
}
`,
		"tests/broken.rs": "#[test]\nfn new() {\n    assert_eq!(calc::new(), 2);\n}\n",
		"tests/slow.rs":   "#[test]\nfn sleeps() {\n    std::thread::sleep(std::time::Duration::from_secs(600));\n}\n",
	},
	Pass:          rustTest("tests/calc.rs", "tests/calc.rs", "passes"),
	Fail:          rustTest("tests/calc.rs", "tests/calc.rs", "asserts"),
	FailText:      "left: 4",
	Panic:         rustTest("tests/calc.rs", "tests/calc.rs", "panics"),
	PanicText:     "cannot parse x",
	Skip:          rustTest("tests/calc.rs", "tests/calc.rs", "skipped"),
	Param:         rustTest("tests/calc.rs", "tests/calc.rs", "table"),
	ParamPass:     rustTest("tests/calc.rs", "tests/calc.rs", "table::one_plus_one"),
	ParamFail:     rustTest("tests/calc.rs", "tests/calc.rs", "table::wrong"),
	Missing:       rustTest("tests/calc.rs", "tests/calc.rs", "missing"),
	Broken:        rustTest("tests/broken.rs", "tests/broken.rs", "new"),
	BrokenOutcome: verify.BuildError,
	BrokenText:    "cannot find function `new`",
	Slow:          rustTest("tests/slow.rs", "tests/slow.rs", "sleeps"),
	Unit:          "tests/calc.rs",
}

var rustChange = adaptertest.Change{
	Base: map[string]string{
		"Cargo.toml":          cargoToml,
		"src/lib.rs":          libRs,
		"tests/common/mod.rs": "pub fn pair() -> (i64, i64) {\n    (1, 2)\n}\n",
		"tests/calc.rs": `use calc::add;

#[test]
fn moved() {
    assert_eq!(add(0, 0), 0);
}

#[test]
fn keep() {
    assert_eq!(add(1, 1), 2);
}

#[test]
fn modified() {
    assert_eq!(add(1, 2), 3);
}
`,
		"tests/more.rs": `use calc::add;

#[test]
fn deleted() {
    assert_eq!(add(2, 2), 4);
}

#[test]
fn skipped() {
    assert_eq!(add(3, 3), 6);
}
`,
		"tests/untouched.rs": "#[test]\nfn untouched() {\n    assert_eq!(calc::add(5, 5), 10);\n}\n",
	},
	Head: map[string]string{
		"src/lib.rs":          "/// Returns a+b.\npub fn add(a: i64, b: i64) -> i64 {\n    b + a\n}\n",
		"tests/common/mod.rs": "pub fn pair() -> (i64, i64) {\n    (2, 1)\n}\n",
		"tests/calc.rs": `use calc::add;

#[test]
fn keep() {
    // A comment changes no token.
    assert_eq!(add(1, 1), 2);
}

#[test]
fn modified() {
    assert_eq!(add(1, 2), 3);
    assert_eq!(add(2, 1), 3);
}

#[test]
fn moved() {
    assert_eq!(add(0, 0), 0);
}
`,
		"tests/more.rs": `use calc::add;

#[test]
#[ignore = "flaky"]
fn skipped() {
    assert_eq!(add(3, 3), 6);
}
`,
		"tests/added.rs": "#[test]\nfn added() {\n    assert_eq!(calc::add(-1, 1), 0);\n}\n",
	},
	Added:     rustTest("tests/added.rs", "tests/added.rs", "added"),
	Modified:  rustTest("tests/calc.rs", "tests/calc.rs", "modified"),
	Moved:     rustTest("tests/calc.rs", "tests/calc.rs", "moved"),
	Unchanged: rustTest("tests/calc.rs", "tests/calc.rs", "keep"),
	Deleted:   rustTest("tests/more.rs", "tests/more.rs", "deleted"),
	Skipped:   rustTest("tests/more.rs", "tests/more.rs", "skipped"),
	Untouched: []string{"tests/untouched.rs", "tests/calc.rs", "tests/added.rs"},
	Source:    "src/lib.rs",
	Target:    "tests/calc.rs",
	Support:   "tests/common/mod.rs",
	Unit:      "tests/calc.rs",
}
