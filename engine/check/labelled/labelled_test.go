package labelled

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRefusesMalformedCases(t *testing.T) {
	dir := t.TempDir()
	good := "verdict: verified\nkind: correct\nwhy: it fixes it\n-- base/a.go --\npackage a\n-- head/a.go --\npackage a // x\n"
	for name, body := range map[string]string{
		"no-verdict":  "kind: k\nwhy: w\n-- base/a --\n-- head/a --\n",
		"bad-verdict": "verdict: fine\nkind: k\nwhy: w\n-- base/a --\n-- head/a --\n",
		"no-why":      "verdict: green\nkind: k\n-- base/a --\n-- head/a --\n",
		"unknown-key": "verdict: green\nkind: k\nwhy: w\nlabel: x\n-- base/a --\n-- head/a --\n",
		"bad-head":    "verdict: green\nkind: k\nwhy: w\nhead: index\n-- base/a --\n-- head/a --\n",
		"bad-side":    "verdict: green\nkind: k\nwhy: w\n-- base/a --\n-- mid/a --\n",
		"dotdot":      "verdict: green\nkind: k\nwhy: w\n-- base/../a --\n-- head/a --\n",
		"no-head":     "verdict: green\nkind: k\nwhy: w\n-- base/a --\n",
	} {
		p := filepath.Join(dir, name+".txtar")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := Parse(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	p := filepath.Join(t.TempDir(), "ok.txtar")
	os.WriteFile(p, []byte(good+"-- head/secret.txt --\n{{fake-secret:github-pat}}\n"), 0o644)
	c, err := Parse(p)
	if err != nil || c.Name != "ok" || c.Verdict != "verified" || len(c.Base) != 1 || len(c.Head) != 2 || c.Python {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
	if s := string(c.Head[1].Data); !strings.HasPrefix(s, "ghp_") || len(strings.TrimSpace(s)) != 40 {
		t.Errorf("fake secret expanded to %q", s)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of a directory without cases succeeded")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (apt-get install git)")
	}
	repo := filepath.Join(t.TempDir(), "r")
	if err := c.Build(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", repo, "log", "--format=%s").Output()
	if err != nil || strings.TrimSpace(string(out)) != "head: ok\nbase: ok" {
		t.Errorf("commits %q, %v", out, err)
	}
}
