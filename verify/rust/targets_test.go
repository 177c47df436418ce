package rust

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeTree writes files (slash paths → content) below a fresh temporary
// directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// workspace has core, app depending on core by path, tool depending on
// app (so on core, transitively), and other on nothing; target/ holds a
// manifest that is build output.
var workspace = map[string]string{
	"Cargo.toml":                "[workspace]\nmembers = [\"core\", \"app\", \"tool\", \"other\"]\n",
	"core/Cargo.toml":           "[package]\nname = \"core\"\nversion = \"0.1.0\"\n",
	"core/src/lib.rs":           "pub fn f() {}\n",
	"core/src/inner.rs":         "pub fn g() {}\n",
	"core/tests/api.rs":         "#[test]\nfn api() {}\n",
	"app/Cargo.toml":            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\ncore = { path = \"../core\" }\n",
	"app/src/main.rs":           "fn main() {}\n",
	"tool/Cargo.toml":           "[package]\nname = \"tool\"\nversion = \"0.1.0\"\n\n[dev-dependencies.app]\npath = \"../app\"\n",
	"tool/src/lib.rs":           "\n",
	"tool/tests/big/main.rs":    "mod cases;\n",
	"tool/tests/big/cases.rs":   "#[test]\nfn case() {}\n",
	"other/Cargo.toml":          "[package]\nname = \"other\"\nversion = \"0.1.0\"\n",
	"other/src/lib.rs":          "\n",
	"other/tests/common/mod.rs": "pub fn h() {}\n",
	"other/tests/one.rs":        "mod common;\n",
	"other/tests/two.rs":        "mod common;\n",
	"target/x/Cargo.toml":       "[package]\nname = \"built\"\nversion = \"0.1.0\"\n",
}

func TestTargetsFollowPathDependencies(t *testing.T) {
	dir := writeTree(t, workspace)
	got, err := New().Targets(t.Context(), nil, dir, rustChangeOf(fileChange("core/src/inner.rs", "pub fn g() {}\n", "pub fn g() { }\n")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"app/src/main.rs", "core/src/lib.rs", "core/tests/api.rs", "tool/src/lib.rs", "tool/tests/big/main.rs"}
	if !slices.Equal(got, want) {
		t.Errorf("Targets = %q, want %q", got, want)
	}
}

func TestCandidatesHelperModules(t *testing.T) {
	dir := writeTree(t, workspace)
	change := rustChangeOf(
		fileChange("other/tests/common/mod.rs", "pub fn h() {}\n", "pub fn h() { }\n"),
		fileChange("tool/tests/big/cases.rs", "#[test]\nfn case() {}\n", "#[test]\nfn case() { assert!(true) }\n"),
		fileChange("core/src/lib.rs", "pub fn f() {}\n", "pub fn f() {}\n#[test]\nfn t() {}\n"),
		fileChange("app/src/main.rs", "fn main() {}\n", "fn main() { }\n"),
	)
	got, err := New().Candidates(t.Context(), nil, dir, change)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"other/tests/common/mod.rs", "tool/tests/big/cases.rs"}; !slices.Equal(got.Support, want) {
		t.Errorf("Support = %q, want %q", got.Support, want)
	}
	if want := []string{"core/src/lib.rs", "other/tests/one.rs", "other/tests/two.rs", "tool/tests/big/main.rs"}; !slices.Equal(got.Units, want) {
		t.Errorf("Units = %q, want %q", got.Units, want)
	}
}
