package docker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestModuleVersionsNameTheViewsModules: a module view is named by the
// module versions it holds (extracted and downloaded), not by the files
// inside a module nor go's VCS checkouts; one more version is another name.
func TestModuleVersionsNameTheViewsModules(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{
		"example.com/a@v1.0.0/a.go", "example.com/a@v1.0.0/sub/b.go",
		"cache/download/example.com/a/@v/v1.0.0.zip", "cache/download/example.com/a/@v/v1.0.0.mod",
		"cache/vcs/0123/HEAD",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := moduleVersions(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cache/download/example.com/a/@v/v1.0.0.mod", "cache/download/example.com/a/@v/v1.0.0.zip", "example.com/a@v1.0.0/"}
	if !slices.Equal(got, want) {
		t.Fatalf("moduleVersions = %q, want %q", got, want)
	}
	if err := os.MkdirAll(filepath.Join(dir, "example.com/a@v1.1.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if more, _ := moduleVersions(dir); slices.Equal(more, got) {
		t.Fatal("one more module version, the same name")
	}
}
