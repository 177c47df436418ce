package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveOrder(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv(Env, "")
	if c, err := Resolve(""); err != nil || c.IsShared() || c.From != "default" {
		t.Fatalf("nothing set: %+v %v", c, err)
	}
	os.MkdirAll(filepath.Join(cfg, "bcode"), 0o700)
	os.WriteFile(filepath.Join(cfg, "bcode", "ledger"), []byte("# the team's ledger\n\npostgres://me:pw@db/bcode\n"), 0o600)
	c, err := Resolve("")
	if err != nil || c.URL != "postgres://me:pw@db/bcode" || !strings.HasSuffix(c.From, "bcode/ledger") {
		t.Fatalf("config file: %+v %v", c, err)
	}
	if strings.Contains(c.String(), "pw") {
		t.Fatalf("String shows the password: %s", c)
	}
	t.Setenv(Env, "postgres://env@db/x")
	if c, _ := Resolve(""); c.URL != "postgres://env@db/x" || c.From != "$BCODE_LEDGER" {
		t.Fatalf("env over config: %+v", c)
	}
	if c, _ := Resolve("postgresql://flag@db/y"); c.URL != "postgresql://flag@db/y" || c.From != "--ledger" {
		t.Fatalf("flag over env: %+v", c)
	}
	if c, err := Resolve("sqlite"); err != nil || c.IsShared() {
		t.Fatalf("--ledger sqlite: %+v %v", c, err)
	}
	if _, err := Resolve("mysql://x"); err == nil || !strings.Contains(err.Error(), "postgres://") {
		t.Fatalf("a foreign URL: %v", err)
	}
}
