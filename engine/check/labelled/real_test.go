package labelled

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadRealResolvesVariants(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name+".txtar"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fix", "verdict: verified\nkind: correct\nwhy: w\nsource: https://example.invalid/r\ncommit: abc\nevidence: base fail, head pass\n"+
		"-- base/a.py --\nbug\n-- base/test_a.py --\nold\n-- head/a.py --\nfix\n-- head/test_a.py --\nnew\n")
	write("fix-dropped", "verdict: failed\nkind: fix-dropped\nwhy: w\nfrom: fix\n-- head/a.py --\n<base>\n-- head/helper.py --\nlax\n")
	cases, err := LoadReal(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Case{}
	for _, c := range cases {
		byName[c.Name] = c
	}
	v := byName["fix-dropped"]
	if v.Name != "fix-dropped" || v.Source != "https://example.invalid/r" || v.Commit != "abc" || !v.Python {
		t.Fatalf("variant = %+v", v)
	}
	got := map[string]string{}
	for _, f := range v.Head {
		got[f.Name] = string(f.Data)
	}
	want := map[string]string{"a.py": "bug\n", "test_a.py": "new\n", "helper.py": "lax\n"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("head %s = %q, want %q", k, got[k], w)
		}
	}
	if len(v.Base) != 2 || len(byName["fix"].Evidence) != 1 {
		t.Errorf("base %d files, evidence %v", len(v.Base), cases[0].Evidence)
	}

	write("orphan", "verdict: failed\nkind: k\nwhy: w\nfrom: nowhere\n-- head/a.py --\nx\n")
	if _, err := LoadReal(dir); err == nil {
		t.Error("a variant of a missing case was accepted")
	}
}
