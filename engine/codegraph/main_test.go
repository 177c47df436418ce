package codegraph

import (
	"fmt"
	"os"
	"testing"

	"github.com/bcode-dev/bcode/sandbox"
)

// TestMain gives this package's tests a bcode cache of their own: go test
// runs packages side by side, and TestIndexCompilesNothing counts the
// outputs of bcode's Go build cache, which another package's tests (the
// evidence engine's, say) write to meanwhile when it is the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bcode-codegraph-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv(sandbox.CacheEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
