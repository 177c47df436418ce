package perf

import (
	"slices"
	"testing"
)

// TestRustCrates: the plain runs find the crate of each Rust unit (a
// target's root file, verify/rust) and leave Go packages to go test.
func TestRustCrates(t *testing.T) {
	crates, goPkgs := rustCrates([]string{"src/lib.rs", "tests/api/main.rs", "./pkg", "calc/tests/api.rs", "calc/src/bin/x.rs", "Cargo.toml"})
	if want := []string{".", "calc"}; !slices.Equal(crates, want) {
		t.Errorf("crates %v, want %v", crates, want)
	}
	if want := []string{"./pkg"}; !slices.Equal(goPkgs, want) {
		t.Errorf("go packages %v, want %v", goPkgs, want)
	}
}
