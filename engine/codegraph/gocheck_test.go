package codegraph

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/gotool"
)

// outsideFixture reaches its own symbols through values of standard
// library types: a type assertion on a reflect.Value's interface, a method
// called on a type switch's case, a call with a standard library argument,
// and a type that embeds one from outside.
const outsideFixture = `
-- go.mod --
module example.com/enc

go 1.22
-- enc.go --
package enc

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"example.com/enc/wire"
)

// Zeroer is implemented by values that know when they are empty.
type Zeroer interface{ IsZero() bool }

type cache struct {
	sync.Mutex
	m map[string]string
}

func (c *cache) get(k string) string { c.Lock(); defer c.Unlock(); return c.m[k] }

// Empty asks a value whether it is empty.
func Empty(v reflect.Value) bool {
	if z, ok := v.Interface().(Zeroer); ok {
		return z.IsZero()
	}
	return wire.Blank(v.Interface().(wire.Marker))
}

// Handle writes a value.
func Handle(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprint(&b, format(r.URL.Path))
}

func format(s string) string { return strings.TrimSpace(s) }
-- wire/wire.go --
package wire

// Marker marks wire values.
type Marker interface{ Mark() }

// Blank reports a blank marker.
func Blank(m Marker) bool { return m == nil }
`

// TestIndexCompilesNothing: the index lists packages and type-checks the
// module's own from source; no compiler runs, so nothing lands in a build
// cache (the bug: half a minute compiling the standard library's export
// data into bcode's cache before an agent's first model request).
func TestIndexCompilesNothing(t *testing.T) {
	tc, err := gotool.Shared(context.Background())
	if err != nil {
		t.Skip(err)
	}
	before := cacheOutputs(t, tc.Cache)
	repo := writeFixture(t, outsideFixture)
	g, st, err := Index(context.Background(), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Errors) > 0 {
		t.Fatalf("index errors (stand-ins for outside packages must not show as errors): %v", st.Errors)
	}
	if after := cacheOutputs(t, tc.Cache); after != before {
		t.Errorf("the build cache %s went from %d to %d outputs: the index compiled something", tc.Cache, before, after)
	}
	const p = "example.com/enc."
	for _, c := range []struct{ from, to string }{
		{p + "Empty", p + "Zeroer"},                  // asserted on a reflect.Value's interface
		{p + "Empty", "example.com/enc/wire.Marker"}, // the same, from another package of the module
		{p + "Empty", "example.com/enc/wire.Blank"},
		{p + "Handle", p + "format"}, // called with an outside package's value
	} {
		if !slices.ContainsFunc(g.Out(c.from), func(e Edge) bool { return e.To == c.to }) {
			t.Errorf("no edge %s -> %s; edges: %v", c.from, c.to, g.Out(c.from))
		}
	}
	if s := g.Symbols[p+"cache.get"]; s == nil || s.Kind != KindMethod {
		t.Errorf("method cache.get of a type embedding sync.Mutex: %+v", s)
	}
}

// cacheOutputs counts the compiled outputs ("-d" files) in a build cache.
func cacheOutputs(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "-d") && !isModuleIndex(p) {
			n++
		}
		return nil
	})
	return n
}

// isModuleIndex reports an output of go's module index ("go index v2"),
// which go list writes into the build cache for the packages it reads:
// a cold cache gets one per standard library package, and none of them
// is compiled code.
func isModuleIndex(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len("go index"))
	n, _ := io.ReadFull(f, head)
	return string(head[:n]) == "go index"
}
