package python

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
)

// TestToolchainNamesPytestsVersion: the key's probe, which reads pytest's
// version from its metadata instead of importing it, names the version
// that importing pytest reports, beside the interpreter and its version.
func TestToolchainNamesPytestsVersion(t *testing.T) {
	py := testenv.SystemPytest(t)
	out, err := exec.Command(py, "-I", "-c", "import pytest; print(pytest.__version__)").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "\npytest " + strings.TrimSpace(string(out)) + "\n"
	id, err := New(py).Toolchain(context.Background(), host.New(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(id, want) || !strings.Contains(id, py+"\n") {
		t.Fatalf("toolchain %q does not name %s and %q", id, py, want)
	}
}
