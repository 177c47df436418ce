package sandbox_test

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// TestCheckThenOpenLosesTheSwapRace is the control for the suite's swap
// attacks: a reader that checks the name (Lstat says regular) and then
// opens it by name, as the old one did, is beaten by the same swapper, and
// reads /dev/zero. The confined reader judges the descriptor it opened, so
// the same race cannot make it read anything but the regular file.
func TestCheckThenOpenLosesTheSwapRace(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "cover.out")
	if err := os.WriteFile(name, []byte("good"), 0o644); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		good, bad := filepath.Join(dir, ".good"), filepath.Join(dir, ".bad")
		for i := 0; !done.Load(); i++ {
			if i%2 == 0 {
				if os.WriteFile(good, []byte("good"), 0o644) == nil {
					os.Rename(good, name)
				}
			} else {
				os.Remove(bad)
				if os.Symlink("/dev/zero", bad) == nil {
					os.Rename(bad, name)
				}
			}
		}
	}()
	defer func() { done.Store(true); wg.Wait() }()
	naive := func() []byte {
		fi, err := os.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(name) // follows whatever is there now
		if err != nil {
			return nil
		}
		defer f.Close()
		b, _ := io.ReadAll(io.LimitReader(f, 64)) // bounded here, unlike a plain os.ReadFile
		return b
	}
	won := 0
	for i := 0; i < 200000 && won == 0; i++ {
		if b := naive(); len(b) > 0 && b[0] == 0 {
			won++
		}
	}
	if won == 0 {
		t.Skip("the swapper never won against check-then-open here: no control")
	}
	c, err := sandbox.OpenConfined(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 5000; i++ {
		b, err := c.ReadFile("cover.out", 64)
		if err == nil && string(b) != "good" {
			t.Fatalf("confined read %d under the same swapper: %q", i, b)
		}
	}
}

// BenchmarkConfinedReadFile is the cost of one confined read of a 4 KiB
// file (openat2 O_PATH, fstat, reopen through /proc, fstat, read) against
// os.ReadFile's plain open and read: the pack and the index read thousands.
func BenchmarkConfinedReadFile(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "f.go"), make([]byte, 4096), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("confined", func(b *testing.B) {
		c, err := sandbox.OpenConfined(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for b.Loop() {
			if _, err := c.ReadFile("a/b/f.go", 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("portable", func(b *testing.B) {
		c, err := sandbox.OpenConfinedPortable(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for b.Loop() {
			if _, err := c.ReadFile("a/b/f.go", 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		p := filepath.Join(dir, "a", "b", "f.go")
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
