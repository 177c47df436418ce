package rust

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

func fileChange(path, base, head string) verify.FileChange {
	fc := verify.FileChange{Path: path, Status: verify.Modified}
	if base != "" {
		fc.Base = []byte(base)
	}
	if head != "" {
		fc.Head = []byte(head)
	}
	switch {
	case base == "":
		fc.Status = verify.Added
	case head == "":
		fc.Status = verify.Deleted
	}
	return fc
}

const libBase = `pub fn add(a: i64, b: i64) -> i64 { a + b }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() { assert_eq!(add(1, 1), 2); }

    #[test]
    fn kept() { assert_eq!(add(0, 0), 0); }

    #[test]
    #[should_panic(expected = "overflow")]
    fn overflows() { add(i64::MAX, 1); }

    #[test]
    fn gated() { assert_eq!(add(2, 2), 4); }

    #[test]
    fn ignored() { assert_eq!(add(3, 3), 6); }

    #[test]
    fn removed() {}
}
`

const libHead = `pub fn add(a: i64, b: i64) -> i64 { a.wrapping_add(b) }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() { assert_eq!(add(1, 1), 2); assert_eq!(add(-1, 1), 0); }

    // Reformatted and moved: the same tokens.
    #[test]
    #[should_panic]
    fn overflows() {
        add(i64::MAX, 1);
    }

    #[test]
    fn kept() {
        assert_eq!(add(0, 0), 0);
    }

    #[cfg(any())]
    #[test]
    fn gated() { assert_eq!(add(2, 2), 4); }

    #[test]
    #[cfg_attr(not(feature = "x"), ignore)]
    fn ignored() { assert_eq!(add(3, 3), 6); }

    #[test]
    fn new_one() {}
}
`

func rustChangeOf(files ...verify.FileChange) *verify.Change {
	return &verify.Change{Base: "base", Head: "head", Files: files}
}

func TestChangedTestsInSourceFiles(t *testing.T) {
	change := rustChangeOf(fileChange("src/lib.rs", libBase, libHead))
	got, err := New().ChangedTests(t.Context(), change)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tc := range got {
		if tc.Package != "src/lib.rs" || tc.File != "src/lib.rs" || tc.Language != "rust" {
			t.Errorf("test %+v: want package and file src/lib.rs", tc)
		}
		names = append(names, tc.Name)
	}
	// Every test whose tokens (attributes included) changed; kept only
	// moved and was reformatted; removed is Tamper's.
	want := []string{"tests::adds", "tests::gated", "tests::ignored", "tests::new_one", "tests::overflows"}
	if !slices.Equal(names, want) {
		t.Errorf("ChangedTests = %q, want %q", names, want)
	}
}

func TestTamper(t *testing.T) {
	change := rustChangeOf(
		fileChange("src/lib.rs", libBase, libHead),
		fileChange("build.rs", "fn main() {}\n", "fn main() { println!(\"cargo:rustc-cfg=skip\"); }\n"),
		fileChange("Cargo.toml", cargoToml, cargoToml+"\n[[test]]\nname = \"api\"\nharness = false\n"),
		fileChange("tests/old.rs", "#[test]\nfn gone() {}\n", ""),
	)
	got, err := New().Tamper(t.Context(), change)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ code, path, text string }{
		{verify.FindingTestDeleted, "src/lib.rs", "tests::removed"},
		{verify.FindingTestDeleted, "tests/old.rs", "gone"},
		{verify.FindingTestSkipped, "src/lib.rs", "tests::gated"},
		{verify.FindingTestSkipped, "src/lib.rs", "tests::ignored"},
		{FindingShouldPanicLoosened, "src/lib.rs", "tests::overflows"},
		{verify.FindingTestInfra, "build.rs", "build script"},
		{verify.FindingConfigChanged, "Cargo.toml", "harness"},
	} {
		if !slices.ContainsFunc(got, func(f verify.Finding) bool {
			return f.Code == w.code && f.Path == w.path && strings.Contains(f.Message, w.text)
		}) {
			t.Errorf("no %s at %s naming %q in %+v", w.code, w.path, w.text, got)
		}
	}
	if len(got) != 7 {
		t.Errorf("%d findings, want 7: %+v", len(got), got)
	}
}

// baseTree is a verify.Workspace that only reads base files from a map.
type baseTree map[string]string

func (b baseTree) Materialize(context.Context, verify.Side, []verify.FileChange) (string, error) {
	return "", errors.ErrUnsupported
}

func (b baseTree) ReadBase(_ context.Context, p string) ([]byte, error) {
	if s, ok := b[p]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

func (baseTree) Close() error { return nil }

func TestTamperGatedModuleDeclaration(t *testing.T) {
	change := rustChangeOf(fileChange("src/lib.rs",
		"pub fn f() {}\n\n#[cfg(test)]\nmod tests;\nmod plain;\n",
		"pub fn f() {}\n\n#[cfg(all(test, feature = \"never\"))]\nmod tests;\n#[cfg(unix)]\nmod plain;\n"))
	change.Workspace = baseTree{
		"src/lib.rs":   "",
		"src/tests.rs": "#[test]\nfn one() {}\n#[test]\nfn two() {}\n",
		"src/plain.rs": "pub fn g() {}\n",
	}
	got, err := New().Tamper(t.Context(), change)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Code != verify.FindingTestSkipped || got[0].Line != 4 || !strings.Contains(got[0].Message, "src/tests.rs, 2 tests") {
		t.Errorf("Tamper = %+v, want one test_skipped at src/lib.rs:4 naming src/tests.rs and its 2 tests", got)
	}
}
