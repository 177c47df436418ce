package rust

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate/mutatetest"
	rustadapter "github.com/bcode-dev/bcode/verify/rust"
)

// conformance is the suite's Rust fixture: small's boundary no test pins,
// big's that tests::big_boundary pins, halve's loop that never ends when
// its condition admits 0, and guard, which aborts its own test process
// when its condition flips.
var conformance = mutatetest.Fixture{
	Base: `
-- Cargo.toml --
[package]
name = "calc"
version = "0.1.0"
edition = "2021"
-- src/lib.rs --
pub fn old(n: u32) -> bool {
    n > 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_boundary() {
        assert!(old(4) && !old(3));
    }
}
`,
	Head: `
-- src/lib.rs --
pub fn old(n: u32) -> bool {
    n > 3
}

pub fn halve(mut x: u64) -> u64 {
    let mut n: u64 = 0;
    while x > 0 { // loop
        x >>= 1;
        n += 1;
    }
    n
}

pub fn small(n: i64) -> bool {
    n < 10 // survivor
}

pub fn big(n: i64) -> bool {
    n > 100 // killed
}

pub fn guard(n: i64) -> i64 {
    if n < 0 { // crash
        std::process::abort();
    }
    n
}

pub fn sizes(v: Vec<Vec<u8>>) -> Option<usize> {
    v.first().map(|x| x.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_boundary() {
        assert!(old(4) && !old(3));
    }

    #[test]
    fn halves() {
        assert_eq!(halve(8), 4);
    }

    #[test]
    fn small_far() {
        assert!(small(3) && !small(20));
    }

    #[test]
    fn big_boundary() {
        assert!(!big(100) && big(101));
    }

    #[test]
    fn guards() {
        assert_eq!(guard(5), 5);
        assert!(1 < 2);
    }
}
`,
	Require: func(t *testing.T) {
		testenv.Command(t, "cargo", "apt-get install cargo (or rustup's, with ~/.cargo/bin on PATH)")
	},
	Unchanged: mutatetest.Site{File: "src/lib.rs", Line: "n > 3"},
	Survivor:  mutatetest.Site{File: "src/lib.rs", Line: "// survivor", Mutated: "<="},
	Covering:  []string{"src/lib.rs::tests::small_far"},
	Killed:    mutatetest.Site{File: "src/lib.rs", Line: "// killed", Mutated: ">="},
	Killer:    verify.Test{Language: "rust", Package: "src/lib.rs", Name: "tests::big_boundary"},
	Loop:      mutatetest.Site{File: "src/lib.rs", Line: "// loop", Mutated: ">="},
	Crash:     mutatetest.Site{File: "src/lib.rs", Line: "// crash", Mutated: ">="},
}

// withToolchain is the engine with the adapter told where rustup's and
// cargo's homes are: the host runner gives commands a fresh HOME.
func withToolchain() *Engine {
	return &Engine{Adapter: func(sandbox.Runner) *rustadapter.Adapter {
		a := rustadapter.New()
		home, _ := os.UserHomeDir()
		for _, v := range [][2]string{{"RUSTUP_HOME", ".rustup"}, {"CARGO_HOME", ".cargo"}} {
			dir := os.Getenv(v[0])
			if dir == "" {
				dir = filepath.Join(home, v[1])
			}
			a.Env = append(a.Env, v[0]+"="+dir)
		}
		return a
	}}
}

func TestConformance(t *testing.T) {
	mutatetest.Run(t, withToolchain(), conformance)
}
