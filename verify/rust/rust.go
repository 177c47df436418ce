// Package rust is the verification gate's Rust adapter, for Cargo projects:
// it finds the #[test] functions a change adds or modifies by their token
// streams (a small tokenizer, no rustc), runs them with
// `cargo test --offline` through a sandbox.Runner, reads libtest's plain
// output into outcomes, computes the test targets a change reaches through
// path dependencies, and reports Rust-specific tampering (deleted, newly
// ignored or cfg-gated tests, loosened #[should_panic], build scripts).
//
// A test's ID is its test target and its path inside it. Test.Package is
// the target's root source file relative to the repository root, which
// names the crate (the directory holding src/ or tests/) and the cargo
// target at once: "src/lib.rs" (the library's unit tests, and its doc
// tests), "src/main.rs", "src/bin/x.rs", "tests/api.rs" or
// "tests/api/main.rs" (integration tests), each under the crate's
// directory in a workspace ("calc/tests/api.rs"). Test.Name is libtest's
// name: the module path and the fn name ("tests::adds", "adds" at the root
// of an integration test), or a doc test's name as rustdoc gives it, its
// file from the workspace's root ("core/src/lib.rs - add (line 3)"), under
// the library's unit. Tests a macro writes (table tests) have the names
// libtest reports, though ChangedTests, reading tokens, cannot list them.
// These units are also what RunSuite, Targets and Candidates deal in.
//
// Unit tests live in source files (#[cfg(test)] mod tests): such a file is
// code, not a test file (IsTestFile is for files under tests/), because a
// change to it changes the code under test; ChangedTests still lists the
// #[test] functions a change adds or alters in it, and Tamper reads it.
package rust

import (
	"path"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// Adapter is the Rust language support of the gate.
type Adapter struct {
	// Cargo is the cargo command run in the sandbox; empty means "cargo".
	Cargo string
	// Env is added to every cargo command ("KEY=value"), on top of the
	// runner's scrubbed environment (RUSTUP_HOME where rustup's proxies
	// must find their toolchains under another HOME).
	Env []string
}

// New returns an Adapter that runs "cargo" from the sandbox's PATH.
func New() *Adapter { return &Adapter{Cargo: "cargo"} }

var (
	_ verify.Adapter     = (*Adapter)(nil)
	_ verify.TestSplicer = (*Adapter)(nil)
)

// Language implements verify.Adapter.
func (a *Adapter) Language() string { return "rust" }

// Owns implements verify.Adapter: Rust sources and the files that decide
// how they build, outside any build output directory (target/).
func (a *Adapter) Owns(p string) bool {
	if inBuildOutput(p) {
		return false
	}
	switch path.Base(p) {
	case "Cargo.toml", "Cargo.lock", "rust-toolchain", "rust-toolchain.toml":
		return true
	}
	if isCargoConfig(p) {
		return true
	}
	return strings.HasSuffix(p, ".rs")
}

// IsTestFile implements verify.Adapter: Rust files under a crate's tests/
// directory (integration tests and their helper modules).
func (a *Adapter) IsTestFile(p string) bool {
	if !strings.HasSuffix(p, ".rs") || inBuildOutput(p) {
		return false
	}
	l, ok := locate(p)
	return ok && l.area == "tests"
}

func (a *Adapter) cargo() string {
	if a.Cargo == "" {
		return "cargo"
	}
	return a.Cargo
}

// inBuildOutput reports whether p lies in a target/ directory above any
// src/ or tests/ directory: cargo's build output, never source.
func inBuildOutput(p string) bool {
	for _, el := range strings.Split(path.Dir(p), "/") {
		switch el {
		case "target", ".bcode-cargo-target":
			return true
		case "src", "tests":
			return false
		}
	}
	return false
}

// isCargoConfig reports whether p is a .cargo/config(.toml), which can
// change flags and cfgs for every build below it.
func isCargoConfig(p string) bool {
	b := path.Base(p)
	return path.Base(path.Dir(p)) == ".cargo" && (b == "config" || b == "config.toml")
}

// location is where a Rust file sits in its crate.
type location struct {
	crate string   // the crate's directory, "." for the root
	area  string   // "src" or "tests"
	rest  []string // the path below area
}

// locate finds the crate directory of a .rs file: the directory above the
// last src/ element, or else the last tests/ element.
func locate(p string) (location, bool) {
	els := strings.Split(p, "/")
	dirs := els[:len(els)-1]
	at := -1
	for i, el := range dirs {
		if el == "src" {
			at = i
		}
	}
	if at < 0 {
		for i, el := range dirs {
			if el == "tests" {
				at = i
			}
		}
	}
	if at < 0 {
		return location{}, false
	}
	crate := strings.Join(els[:at], "/")
	if crate == "" {
		crate = "."
	}
	return location{crate: crate, area: els[at], rest: els[at+1:]}, true
}

// inCrate joins a path relative to a crate's directory.
func inCrate(crate, rel string) string {
	if crate == "." || crate == "" {
		return rel
	}
	return crate + "/" + rel
}

// unitOf returns the test target (its root file: Test.Package) and the
// module path within it of the Rust file p. hasLib says whether a crate has
// src/lib.rs, which owns the crate's other src files; without one they
// belong to src/main.rs.
func unitOf(p string, hasLib func(crate string) bool) (unit string, module []string, ok bool) {
	l, ok := locate(p)
	if !ok || !strings.HasSuffix(p, ".rs") {
		return "", nil, false
	}
	r := l.rest
	switch {
	case l.area == "tests" && len(r) == 1:
		return inCrate(l.crate, "tests/"+r[0]), nil, true
	case l.area == "tests":
		return inCrate(l.crate, "tests/"+r[0]+"/main.rs"), modulePath(r[1:]), true
	case len(r) == 1 && (r[0] == "lib.rs" || r[0] == "main.rs"):
		return inCrate(l.crate, "src/"+r[0]), nil, true
	case r[0] == "bin" && len(r) == 2:
		return inCrate(l.crate, "src/bin/"+r[1]), nil, true
	case r[0] == "bin":
		return inCrate(l.crate, "src/bin/"+r[1]+"/main.rs"), modulePath(r[2:]), true
	case hasLib(l.crate):
		return inCrate(l.crate, "src/lib.rs"), modulePath(r), true
	default:
		return inCrate(l.crate, "src/main.rs"), modulePath(r), true
	}
}

// modulePath is the module path of a file below a target's root
// directory: a/b.rs and a/b/mod.rs are a::b; main.rs is the root.
func modulePath(rest []string) []string {
	var out []string
	for i, el := range rest {
		if i == len(rest)-1 {
			el = strings.TrimSuffix(el, ".rs")
			if el == "mod" || el == "main" && len(rest) == 1 {
				break
			}
		}
		out = append(out, el)
	}
	return out
}

// splitUnit returns the crate directory of a unit (a target's root file)
// and the cargo flags that select the target.
func splitUnit(unit string) (crate string, flags []string, ok bool) {
	l, ok := locate(unit)
	if !ok {
		return "", nil, false
	}
	r := l.rest
	switch {
	case l.area == "tests" && len(r) == 1 && strings.HasSuffix(r[0], ".rs"):
		return l.crate, []string{"--test", strings.TrimSuffix(r[0], ".rs")}, true
	case l.area == "tests" && len(r) == 2 && r[1] == "main.rs":
		return l.crate, []string{"--test", r[0]}, true
	case l.area == "src" && len(r) == 1 && r[0] == "lib.rs":
		return l.crate, []string{"--lib"}, true
	case l.area == "src" && len(r) == 1 && r[0] == "main.rs":
		return l.crate, []string{"--bins"}, true
	case l.area == "src" && len(r) == 2 && r[0] == "bin" && strings.HasSuffix(r[1], ".rs"):
		return l.crate, []string{"--bin", strings.TrimSuffix(r[1], ".rs")}, true
	case l.area == "src" && len(r) == 3 && r[0] == "bin" && r[2] == "main.rs":
		return l.crate, []string{"--bin", r[1]}, true
	}
	return "", nil, false
}
