package sandbox_test

import (
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/confinedtest"
)

func TestConfinedAttacks(t *testing.T) {
	confinedtest.Run(t, func(dir string) (confinedtest.Reader, error) { return sandbox.OpenConfined(dir) })
}

// TestConfinedAttacksPortable runs the suite against the os.Root path the
// reader takes where openat2 is missing.
func TestConfinedAttacksPortable(t *testing.T) {
	confinedtest.Run(t, func(dir string) (confinedtest.Reader, error) { return sandbox.OpenConfinedPortable(dir) })
}
