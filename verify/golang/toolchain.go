package golang

import (
	"context"
	"fmt"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

var _ verify.Toolchain = (*Adapter)(nil)

// toolchainVars are the go env values that decide what a test binary is
// and does: the toolchain's version (go.mod's toolchain line picks it per
// module), the target, cgo and its compiler, and the flags from the
// environment.
var toolchainVars = []string{"GOVERSION", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "GOEXPERIMENT", "GOFLAGS", "CGO_ENABLED", "CC", "GOTOOLCHAIN", "GOWORK"}

// Toolchain implements verify.Toolchain: go env of toolchainVars in every
// module root of dir, as the suite's go test would run there.
func (a *Adapter) Toolchain(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	l, err := findModules(dir)
	if err != nil {
		return "", fmt.Errorf("finding Go modules: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "go binary %q env %q skipped %q\n", a.goBin(), a.Env, l.Skipped)
	for _, root := range l.Roots {
		cwd, env, _ := a.goCommand(dir, l, root)
		out, err := verify.ProbeToolchain(ctx, r, cwd, env, append([]string{a.goBin(), "env"}, toolchainVars...)...)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s:\n%s\n", root, out)
	}
	return strings.ReplaceAll(b.String(), dir, "<snapshot>"), nil
}
