package rust

import (
	"context"
	"fmt"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

var _ verify.Toolchain = (*Adapter)(nil)

// Toolchain implements verify.Toolchain: cargo's and rustc's versions as
// the suite's cargo would run them in dir (rust-toolchain files pick the
// toolchain there), with the adapter's environment.
func (a *Adapter) Toolchain(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	cargo, err := verify.ProbeToolchain(ctx, r, dir, a.Env, a.cargo(), "--version", "--verbose")
	if err != nil {
		return "", err
	}
	rustc, err := verify.ProbeToolchain(ctx, r, dir, a.Env, "rustc", "-vV")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("env %q\n%s\n%s", a.Env, cargo, rustc), nil
}
