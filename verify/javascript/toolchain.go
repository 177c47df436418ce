package javascript

import (
	"context"
	"errors"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

var _ verify.Toolchain = (*Adapter)(nil)

// errModulesUnkeyed: the runs link installed packages from outside the
// tree (a checkout's node_modules, Packages' installs), whose content no
// key covers.
var errModulesUnkeyed = errors.New("javascript: the tests import installed packages from outside the tree")

// Toolchain implements verify.Toolchain: node's version. The runner
// (node --test, vitest, jest) and the lock file are in the tree; installed
// packages linked from outside it are not, and leave the base unkeyed.
func (a *Adapter) Toolchain(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	if a.Checkout != "" || len(a.Modules) > 0 {
		return "", errModulesUnkeyed
	}
	v, err := verify.ProbeToolchain(ctx, r, dir, nil, a.node(), "--version")
	return "node " + v, err
}
