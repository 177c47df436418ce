package check

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/host"
)

// TestRustHomes: rustup's and cargo's homes are passed as rustup and cargo
// choose them (the variable, else under the user's home), only when the
// directory exists; a runner that is not the host's gets none.
func TestRustHomes(t *testing.T) {
	home := t.TempDir()
	rustup := filepath.Join(t.TempDir(), "rustup")
	if err := os.Mkdir(rustup, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(home, ".cargo"), 0o755); err != nil {
		t.Fatal(err)
	}
	userHome := func() (string, error) { return home, nil }
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	got := rustHomes(env(map[string]string{"RUSTUP_HOME": rustup}), userHome)
	if want := []string{"RUSTUP_HOME=" + rustup, "CARGO_HOME=" + filepath.Join(home, ".cargo")}; !slices.Equal(got, want) {
		t.Errorf("RUSTUP_HOME set, ~/.cargo present: %v, want %v", got, want)
	}
	got = rustHomes(env(map[string]string{"CARGO_HOME": filepath.Join(home, "missing")}), userHome)
	if len(got) != 0 {
		t.Errorf("no ~/.rustup, CARGO_HOME missing: %v, want nothing", got)
	}
	got = rustHomes(env(nil), func() (string, error) { return "", errors.New("no home") })
	if len(got) != 0 {
		t.Errorf("no home and no variables: %v, want nothing", got)
	}
	if a := rustAdapter(nil); len(a.Env) != 0 {
		t.Errorf("no runner: env %v", a.Env)
	}
	if a := rustAdapter(dockerNamed{host.New()}); len(a.Env) != 0 {
		t.Errorf("a container runner: env %v, want none of the host's homes", a.Env)
	}
}

// dockerNamed is a runner that says it is not the host's.
type dockerNamed struct{ *host.Runner }

func (dockerNamed) Name() string { return "docker" }
