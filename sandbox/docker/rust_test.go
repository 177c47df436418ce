package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
)

// TestRustInTheSandbox: the host's Rust toolchain runs a crate's tests in
// the container, offline, from its read-only mount; a rustup toolchain in
// the user's home appears at RustTarget, never at its home path.
func TestRustInTheSandbox(t *testing.T) {
	testenv.Command(t, "cargo", "apt-get install cargo (or rustup's, with ~/.cargo/bin on PATH)")
	if HostRustSysroot(context.Background()) == "" {
		t.Fatal("cargo is on PATH but rustc --print sysroot names no toolchain with cargo")
	}
	wt := t.TempDir()
	crate := filepath.Join(wt, "clamp")
	for p, c := range map[string]string{
		"Cargo.toml": "[package]\nname = \"clamp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"src/lib.rs": "pub fn clamp(x: i32, hi: i32) -> i32 { x.min(hi) }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn above() { assert_eq!(super::clamp(15, 10), 10); }\n}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(crate, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crate, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(crate, 0o775); err != nil {
		t.Fatal(err)
	}
	r := newTestRunner(t, wt, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := r.Run(ctx, sandbox.Command{Dir: crate, Args: []string{"cargo", "test", "--offline"},
		Env: []string{"CARGO_TARGET_DIR=" + filepath.Join(crate, "target")}, Timeout: 4 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "test tests::above ... ok") {
		t.Fatalf("cargo test in the sandbox: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	home, _ := os.UserHomeDir()
	if sys := HostRustSysroot(context.Background()); home != "" && strings.HasPrefix(sys, home+"/") {
		res, err := r.Run(ctx, sandbox.Command{Dir: crate, Args: []string{"sh", "-c", "echo $PATH; ls -d " + sys + " 2>&1 || true"}, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout)
		if !strings.Contains(out, RustTarget+"/bin") || strings.Contains(out, sys+"\n") {
			t.Errorf("the rustup toolchain in the home: want it at %s only, the container says:\n%s", RustTarget, out)
		}
	}
}
