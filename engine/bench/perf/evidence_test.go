package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// TestCorpusChangesReadsBothLists: "all" is the shared corpus's rows and
// then the bench's own, "large" the bench's own, a list is taken as given;
// a malformed row or change, or a list that cannot be read, is an error.
func TestCorpusChangesReadsBothLists(t *testing.T) {
	dir := t.TempDir()
	shared := "# module\tbase\thead\ngithub.com/a/b\tv1.0.0\tv1.1.0\n\n"
	if err := os.WriteFile(filepath.Join(dir, "go-changes.tsv"), []byte(shared), 0o644); err != nil {
		t.Fatal(err)
	}
	own := "testdata/evidence-changes.tsv"
	all, err := corpusChanges(dir, own, "all")
	if err != nil {
		t.Fatal(err)
	}
	large, err := corpusChanges(dir, own, "large")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(large)+1 || all[0] != "github.com/a/b@v1.0.0..v1.1.0" || strings.Join(all[1:], ",") != strings.Join(large, ",") {
		t.Fatalf("all = %q, large = %q", all, large)
	}
	for _, want := range []string{"github.com/shopspring/decimal@v1.3.1..v1.4.0", "github.com/BurntSushi/toml@v1.3.2..v1.4.0"} {
		if !strings.Contains(strings.Join(large, ","), want) {
			t.Errorf("large = %q, want %s among them", large, want)
		}
	}
	if got, err := corpusChanges(dir, own, "m@v1..v2,n@v3..v4"); err != nil || len(got) != 2 {
		t.Errorf("a list: %q, %v", got, err)
	}

	bad := filepath.Join(dir, "bad.tsv")
	if err := os.WriteFile(bad, []byte("github.com/a/b v1.0.0 v1.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ own, spec, want string }{
		{bad, "large", "bad.tsv:1: want MODULE, BASE and HEAD"},
		{filepath.Join(dir, "missing.tsv"), "all", "the list of real changes"},
		{own, "github.com/a/b@v1.0.0", "is not MODULE@BASE..HEAD"},
		{own, "@v1..v2", "is not MODULE@BASE..HEAD"},
	} {
		if _, err := corpusChanges(dir, c.own, c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("corpusChanges(%s, %q) = %v, want an error with %q", c.own, c.spec, err, c.want)
		}
	}
}

// TestBodyToEdit: the save of -save body goes into the first function
// whose body holds a changed line; none when no body holds one; with no
// ranges, into the first function with a body.
func TestBodyToEdit(t *testing.T) {
	src := []byte("package p\n\nvar x = 1\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int { return 2 }\n")
	cases := []struct {
		ranges []verify.LineRange
		want   string
	}{
		{[]verify.LineRange{{Start: 9, End: 9}}, "func B() int {"},
		{[]verify.LineRange{{Start: 6, End: 6}}, "func A() int {"},
		{[]verify.LineRange{{Start: 3, End: 3}}, ""},
		{nil, "func A() int {"},
	}
	for _, c := range cases {
		at, err := bodyToEdit(src, c.ranges)
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" {
			if at >= 0 {
				t.Errorf("ranges %v: edit after %q, want none", c.ranges, src[:at])
			}
			continue
		}
		if at < 0 || !strings.HasSuffix(string(src[:at]), c.want) {
			t.Errorf("ranges %v: edit at %d, want after %q", c.ranges, at, c.want)
		}
	}
	if at, err := bodyToEdit([]byte("package p\n\nvar x = 1\n"), nil); err != nil || at >= 0 {
		t.Errorf("a file without a function body: %d, %v", at, err)
	}
	if _, err := bodyToEdit([]byte("package p\n\nfunc {"), nil); err == nil {
		t.Error("a file that does not parse: no error")
	}
}
