package python

import (
	"context"
	"fmt"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

var _ verify.Toolchain = (*Adapter)(nil)

// toolchainScript prints what decides a pytest run besides the snapshot:
// the interpreter, its version, pytest's, and every installed
// distribution with its version, as `python -I` (the runs' isolation)
// sees them. pytest's version is read from its metadata, as every other
// distribution's is: importing it would double the probe's CPU (≈0.1 s
// more here, on every gate); a pytest without metadata is imported, and
// one that neither has metadata nor imports fails the probe (no key).
const toolchainScript = `import sys, importlib.metadata as m
print(sys.executable); print(sys.version)
try:
    v = m.version("pytest")
except m.PackageNotFoundError:
    import pytest; v = pytest.__version__
print("pytest", v)
print("\n".join(sorted("%s==%s" % (d.metadata["Name"], d.version) for d in m.distributions())))`

// Toolchain implements verify.Toolchain: the interpreter the runs in dir
// would use (Interpreter) and toolchainScript's answer under it. No
// interpreter is an identity too: the runs then fail alike.
func (a *Adapter) Toolchain(ctx context.Context, r sandbox.Runner, dir string) (string, error) {
	head := fmt.Sprintf("python configured %q startup %t\n", a.Python, a.StartupFiles)
	py, err := a.Interpreter(ctx, r, dir)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return strings.ReplaceAll(head+"no interpreter: "+err.Error(), dir, "<snapshot>"), nil
	}
	out, err := verify.ProbeToolchain(ctx, r, dir, []string{"PYTHONNOUSERSITE=1"}, py, "-I", "-B", "-c", toolchainScript)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(head+py+"\n"+out, dir, "<snapshot>"), nil
}

var _ verify.ToolchainFiles = (*Adapter)(nil)

// DecidesToolchain implements verify.ToolchainFiles: the files of a
// snapshot Interpreter reads to choose the interpreter are its own .venv
// and pyenv's .python-version; the rest of the toolchain is the machine's.
func (a *Adapter) DecidesToolchain(path string) bool {
	return path == ".python-version" || path == ".venv" || strings.HasPrefix(path, ".venv/")
}
