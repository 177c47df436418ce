package rust

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
)

// needCargo skips (or, under BCODE_REQUIRE_ALL=1, fails) a test that runs
// the real cargo when it is missing.
func needCargo(t *testing.T) {
	t.Helper()
	testenv.Command(t, "cargo", "apt-get install cargo (or rustup's, with ~/.cargo/bin on PATH)")
}

// toolchainEnv keeps rustup's proxies finding their toolchains under the
// host runner's fresh HOME.
func toolchainEnv() []string {
	var env []string
	home, _ := os.UserHomeDir()
	for _, v := range []string{"RUSTUP_HOME", "CARGO_HOME"} {
		if p := os.Getenv(v); p != "" {
			env = append(env, v+"="+p)
		}
	}
	if os.Getenv("RUSTUP_HOME") == "" && home != "" {
		env = append(env, "RUSTUP_HOME="+filepath.Join(home, ".rustup"))
	}
	if os.Getenv("CARGO_HOME") == "" && home != "" {
		env = append(env, "CARGO_HOME="+filepath.Join(home, ".cargo"))
	}
	return env
}

func newAdapter() *Adapter {
	a := New()
	a.Env = toolchainEnv()
	return a
}

// newRunner is a host runner; the fixtures have no dependencies and every
// cargo command is offline.
func newRunner(t *testing.T) *host.Runner {
	t.Helper()
	needCargo(t)
	return &host.Runner{}
}
