// Package confinedtest is the attack suite of bcode's read boundary: every
// host read of what an agent, a repository under test or a test run can
// write goes through one confined reader, and Run attacks a reader with
// what such a writer can plant (links out of the root, devices, fifos,
// sockets, directories, sparse and growing files, /proc's magic links,
// swaps between a check and an open). Like runnertest for runners, it is
// one suite that every implementation of the boundary must pass.
package confinedtest

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// Reader is a confined reader over one root directory.
type Reader interface {
	ReadFile(name string, max int64) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Close() error
}

// Opener opens a Reader confined to dir.
type Opener func(dir string) (Reader, error)

// hangLimit is how long a read may take before the suite calls it blocked:
// a hang detector (a fifo open waiting for a writer), not a speed target.
const hangLimit = 20 * time.Second

// Run runs every attack against open.
func Run(t *testing.T, open Opener) {
	if runtime.GOOS == "windows" {
		t.Skip("the attacks need unix links, fifos and sockets")
	}
	cases := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"RegularFileIsRead", regularFileIsRead},
		{"CapIsMandatory", capIsMandatory},
		{"MissingFileIsNotARefusal", missingFileIsNotARefusal},
		{"NamesOutOfTheRoot", namesOutOfTheRoot},
		{"FinalLinkToDevZero", finalLinkToDevZero},
		{"DirLinkToDev", dirLinkToDev},
		{"LinkInsideTheRootIsRefusedToo", linkInsideTheRoot},
		{"LinkChainOutOfTheRoot", linkChainOutOfTheRoot},
		{"AbsoluteLinkToEtcShadow", absoluteLinkToEtcShadow},
		{"FifoDoesNotBlock", fifoDoesNotBlock},
		{"Socket", socket},
		{"DirectoryWhereAFileIsExpected", directoryWhereAFileIsExpected},
		{"SparseTenGiB", sparseTenGiB},
		{"ProcSelfMagicLinks", procSelfMagicLinks},
		{"ProcReportsSizeZero", procReportsSizeZero},
		{"GrowingFile", growingFile},
		{"SwapToLinkBetweenCheckAndOpen", swapToLink},
		{"SwapToFifoBetweenCheckAndOpen", swapToFifo},
		{"SwapToInsideLinkBetweenCheckAndOpen", swapToInsideLink},
		{"ReadDirRefusesLinksAndFifos", readDirRefuses},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

// fixture is a root to read beneath and a secret next to it, outside.
type fixture struct {
	dir, root, secret string
	r                 Reader
}

func newFixture(t *testing.T, open Opener) *fixture {
	t.Helper()
	// Short: a socket's path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "ct")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fixture{dir: dir, root: filepath.Join(dir, "root"), secret: filepath.Join(dir, "outside", "secret")}
	must(t, os.MkdirAll(f.root, 0o755))
	must(t, os.MkdirAll(filepath.Dir(f.secret), 0o755))
	must(t, os.WriteFile(f.secret, []byte("SECRET-OUTSIDE-THE-ROOT"), 0o644))
	return f
}

func (f *fixture) open(t *testing.T, open Opener) Reader {
	t.Helper()
	r, err := open(f.root)
	if err != nil {
		t.Fatalf("opening the reader on %s: %v", f.root, err)
	}
	t.Cleanup(func() { r.Close() })
	f.r = r
	return r
}

func (f *fixture) path(rel string) string { return filepath.Join(f.root, filepath.FromSlash(rel)) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// read runs one read with the hang detector.
func read(t *testing.T, r Reader, name string, max int64) ([]byte, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := r.ReadFile(name, max)
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		if int64(len(res.b)) > max {
			t.Errorf("ReadFile(%q, %d) returned %d bytes, over its cap", name, max, len(res.b))
		}
		return res.b, res.err
	case <-time.After(hangLimit):
		t.Fatalf("ReadFile(%q) still blocked after %v", name, hangLimit)
		return nil, nil
	}
}

// refused asserts err is a refusal wrapping want, and that no byte came.
func refused(t *testing.T, what string, b []byte, err error, want error) {
	t.Helper()
	if len(b) > 0 {
		t.Errorf("%s: read %d bytes (%q...), want a refusal", what, len(b), trunc(b))
	}
	if _, ok := sandbox.Refused(err); !ok || !errors.Is(err, want) {
		t.Errorf("%s: err = %v, want a *sandbox.RefusedError wrapping %v", what, err, want)
	}
}

func trunc(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

func regularFileIsRead(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.MkdirAll(f.path("a/b"), 0o755))
	must(t, os.WriteFile(f.path("a/b/c.txt"), []byte("hello"), 0o644))
	r := f.open(t, open)
	b, err := read(t, r, "a/b/c.txt", 5)
	if err != nil || string(b) != "hello" {
		t.Errorf("ReadFile at exactly the cap = %q, %v; want hello", b, err)
	}
	b, err = read(t, r, "a/b/c.txt", 4)
	refused(t, "one byte over the cap", b, err, sandbox.ErrTooLarge)
	must(t, os.WriteFile(f.path("empty"), nil, 0o644))
	if b, err := read(t, r, "empty", 1); err != nil || len(b) != 0 {
		t.Errorf("empty file: %q, %v", b, err)
	}
}

func capIsMandatory(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.WriteFile(f.path("x"), []byte("x"), 0o644))
	r := f.open(t, open)
	for _, max := range []int64{0, -1} {
		if _, err := r.ReadFile("x", max); !errors.Is(err, sandbox.ErrNoCap) {
			t.Errorf("ReadFile with cap %d: %v, want ErrNoCap", max, err)
		}
	}
}

func missingFileIsNotARefusal(t *testing.T, open Opener) {
	f := newFixture(t, open)
	r := f.open(t, open)
	_, err := read(t, r, "nope/cover.out", 10)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if _, ok := sandbox.Refused(err); ok {
		t.Errorf("missing file reported as a refusal: %v", err)
	}
}

func namesOutOfTheRoot(t *testing.T, open Opener) {
	f := newFixture(t, open)
	r := f.open(t, open)
	for _, name := range []string{"../outside/secret", "/etc/passwd", f.secret, "a/../../outside/secret", ".."} {
		b, err := read(t, r, name, 1<<20)
		refused(t, name, b, err, sandbox.ErrEscapes)
	}
}

// The attack of issue 26: the coverage profile replaced by a link to
// /dev/zero exhausted host memory through an unconfined read.
func finalLinkToDevZero(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.Symlink("/dev/zero", f.path("cover.out")))
	must(t, os.Symlink("../../../../../../../../dev/zero", f.path("rel.out")))
	r := f.open(t, open)
	for _, name := range []string{"cover.out", "rel.out"} {
		b, err := read(t, r, name, 1<<20)
		refused(t, name, b, err, sandbox.ErrNotRegular)
	}
}

func dirLinkToDev(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.Symlink("/dev", f.path("dev")))
	must(t, os.Symlink("../../../../../../../../../dev", f.path("reldev")))
	r := f.open(t, open)
	for _, name := range []string{"dev/zero", "reldev/zero", "dev/urandom"} {
		b, err := read(t, r, name, 1<<20)
		refused(t, name, b, err, sandbox.ErrEscapes)
	}
}

func linkInsideTheRoot(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.WriteFile(f.path("real"), []byte("inside"), 0o644))
	must(t, os.Symlink("real", f.path("alias")))
	r := f.open(t, open)
	b, err := read(t, r, "alias", 100)
	refused(t, "a link to a file inside the root", b, err, sandbox.ErrSymlink)
}

// Chains whose text, cleaned, stays inside the root, and which the kernel
// resolves out of it through an earlier link.
func linkChainOutOfTheRoot(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.MkdirAll(f.path("a/b/c"), 0o755))
	must(t, os.Symlink("../..", f.path("a/b/c/z")))     // a/b/c/z -> a
	must(t, os.Symlink("../../..", f.path("a/b/up")))   // a/b/up -> dir of root
	must(t, os.Symlink("a/b/up", f.path("hop")))        // hop -> a/b/up
	must(t, os.Symlink("hop/outside", f.path("hop2")))  // hop2 -> outside dir
	must(t, os.Symlink("hop2/secret", f.path("final"))) // final -> the secret
	r := f.open(t, open)
	for _, name := range []string{"a/b/up/outside/secret", "hop/outside/secret", "hop2/secret", "a/b/c/z/b/up/outside/secret"} {
		b, err := read(t, r, name, 1<<20)
		refused(t, name, b, err, sandbox.ErrEscapes)
	}
	b, err := read(t, r, "final", 1<<20)
	refused(t, "final", b, err, sandbox.ErrNotRegular)
}

func absoluteLinkToEtcShadow(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.Symlink("/etc/shadow", f.path("shadow")))
	must(t, os.Symlink("/etc", f.path("etc")))
	must(t, os.Symlink(f.secret, f.path("secret")))
	must(t, os.Symlink(filepath.Dir(f.secret), f.path("out")))
	r := f.open(t, open)
	b, err := read(t, r, "shadow", 1<<20)
	refused(t, "shadow", b, err, sandbox.ErrSymlink)
	b, err = read(t, r, "secret", 1<<20)
	refused(t, "secret", b, err, sandbox.ErrSymlink)
	for _, name := range []string{"etc/shadow", "etc/passwd", "out/secret"} {
		b, err := read(t, r, name, 1<<20)
		refused(t, name, b, err, sandbox.ErrEscapes)
	}
}

func fifoDoesNotBlock(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, mkfifo(f.path("cover.out"), 0o644))
	r := f.open(t, open)
	b, err := read(t, r, "cover.out", 1<<20)
	refused(t, "fifo", b, err, sandbox.ErrNotRegular)
}

func socket(t *testing.T, open Opener) {
	f := newFixture(t, open)
	l, err := net.Listen("unix", f.path("s"))
	if err != nil {
		t.Skipf("no unix socket here: %v", err)
	}
	defer l.Close()
	r := f.open(t, open)
	b, err := read(t, r, "s", 1<<20)
	refused(t, "socket", b, err, sandbox.ErrNotRegular)
}

func directoryWhereAFileIsExpected(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.MkdirAll(f.path("r.xml"), 0o755))
	r := f.open(t, open)
	for _, name := range []string{"r.xml", "."} {
		b, err := read(t, r, name, 1<<20)
		refused(t, name, b, err, sandbox.ErrNotRegular)
	}
}

func sparseTenGiB(t *testing.T, open Opener) {
	f := newFixture(t, open)
	fh, err := os.Create(f.path("cover.out"))
	must(t, err)
	if err := fh.Truncate(10 << 30); err != nil {
		fh.Close()
		t.Skipf("no sparse files here: %v", err)
	}
	fh.Close()
	r := f.open(t, open)
	b, err := read(t, r, "cover.out", 64<<20)
	refused(t, "sparse 10 GiB", b, err, sandbox.ErrTooLarge)
}

// /proc holds magic links (/proc/self/root, /proc/self/fd/N, /proc/self/cwd)
// that the kernel resolves to an object, not a path: no lexical rule sees
// where they lead.
func procSelfMagicLinks(t *testing.T, open Opener) {
	if _, err := os.Stat("/proc/self/root"); err != nil {
		t.Skip("no /proc")
	}
	f := newFixture(t, open)
	must(t, os.Symlink("/proc/self", f.path("self")))
	must(t, os.Symlink("/proc/self/root/etc/passwd", f.path("passwd")))
	must(t, os.Symlink("/proc/self/fd", f.path("fd")))
	r := f.open(t, open)
	for _, name := range []string{"self/root/etc/passwd", "self/environ", "fd/0", "self/cwd/x"} {
		b, err := read(t, r, name, 1<<20)
		refused(t, name, b, err, sandbox.ErrEscapes)
	}
	b, err := read(t, r, "passwd", 1<<20)
	refused(t, "passwd", b, err, sandbox.ErrSymlink)

	// Rooted in /proc/self itself: its magic links must not be followed.
	pr, err := open("/proc/self")
	if err != nil {
		t.Fatalf("opening the reader on /proc/self: %v", err)
	}
	defer pr.Close()
	for _, name := range []string{"root/etc/passwd", "cwd/go.mod", "exe"} {
		b, err := read(t, pr, name, 1<<20)
		if len(b) > 0 || err == nil {
			t.Errorf("/proc/self %s: read %d bytes, err %v; want a refusal", name, len(b), err)
		}
		if _, ok := sandbox.Refused(err); !ok {
			t.Errorf("/proc/self %s: err %v, want a refusal", name, err)
		}
	}
}

// /proc files report size 0 and hold more: the cap, not the size, bounds
// the read.
func procReportsSizeZero(t *testing.T, open Opener) {
	fi, err := os.Stat("/proc/self/status")
	if err != nil || fi.Size() != 0 {
		t.Skip("no /proc/self/status of size 0 here")
	}
	r, err := open("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := read(t, r, "status", 1<<20)
	if err != nil || !bytes.Contains(b, []byte("Name:")) {
		t.Errorf("status with a 1 MiB cap: %d bytes, %v; want its content although its size says 0", len(b), err)
	}
	b, err = read(t, r, "status", 16)
	refused(t, "status over a 16-byte cap", b, err, sandbox.ErrTooLarge)
}

func growingFile(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.WriteFile(f.path("log"), []byte("start\n"), 0o644))
	r := f.open(t, open)
	const max = 256 << 10
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		w, err := os.OpenFile(f.path("log"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			close(started)
			return
		}
		defer w.Close()
		chunk := bytes.Repeat([]byte("x"), 1024)
		for n := 0; n < 4*max/len(chunk); n++ {
			w.Write(chunk)
			if n == 0 {
				close(started)
			}
		}
	}()
	<-started
	reads, tooLarge := 0, 0
	for growing := true; growing && reads < 100000; reads++ {
		select {
		case <-done:
			growing = false
		default:
		}
		b, err := read(t, r, "log", max)
		switch {
		case errors.Is(err, sandbox.ErrTooLarge):
			tooLarge++
		case err != nil:
			t.Fatalf("growing file: %v", err)
		case !bytes.HasPrefix(b, []byte("start\n")):
			t.Fatalf("growing file: read %q..., want its start", trunc(b))
		}
	}
	<-done
	b, err := read(t, r, "log", max)
	refused(t, "the grown file", b, err, sandbox.ErrTooLarge)
	t.Logf("%d of %d reads while it grew were over the cap", tooLarge, reads)
}

// swapper replaces name, over and over, by a regular file and by bad (made
// by mk at a temporary name): the time of check and the time of use differ
// whenever a reader checks a name and then opens it.
func swapper(t *testing.T, f *fixture, name string, mk func(tmp string) error) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		good, bad := f.path(".good"), f.path(".bad")
		for i := 0; !done.Load(); i++ {
			if i%2 == 0 {
				if os.WriteFile(good, []byte("good"), 0o644) == nil {
					os.Rename(good, f.path(name))
				}
			} else {
				os.Remove(bad)
				if mk(bad) == nil {
					os.Rename(bad, f.path(name))
				}
			}
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

func isRefusal(err error) bool {
	_, ok := sandbox.Refused(err)
	return ok && (errors.Is(err, sandbox.ErrNotRegular) || errors.Is(err, sandbox.ErrEscapes))
}

func swapRace(t *testing.T, open Opener, mk func(tmp string) error) {
	f := newFixture(t, open)
	must(t, os.WriteFile(f.path("cover.out"), []byte("good"), 0o644))
	r := f.open(t, open)
	stop := swapper(t, f, "cover.out", mk)
	defer stop()
	good, bad := 0, 0
	for i := 0; i < 2000; i++ {
		b, err := read(t, r, "cover.out", 1<<20)
		switch {
		case err == nil && string(b) == "good":
			good++
		case err == nil:
			t.Fatalf("read %d: got %q, neither the regular file nor a refusal", i, trunc(b))
		case isRefusal(err):
			// ErrNotRegular when the swap came before the open; on the
			// os.Root path a link swapped in between its Lstat and its
			// open is resolved, out of the root: ErrEscapes.
			bad++
		case errors.Is(err, fs.ErrNotExist):
			// between a remove and a rename
		default:
			t.Fatalf("read %d: %v", i, err)
		}
	}
	t.Logf("2000 reads under swaps: %d of the regular file, %d refused", good, bad)
}

func swapToLink(t *testing.T, open Opener) {
	swapRace(t, open, func(tmp string) error { return os.Symlink("/dev/zero", tmp) })
}

func swapToFifo(t *testing.T, open Opener) {
	swapRace(t, open, func(tmp string) error { return mkfifo(tmp, 0o644) })
}

// A link to another file inside the root: no escape, but not the file the
// name named when it was checked; its content must never come back.
func swapToInsideLink(t *testing.T, open Opener) {
	swapRace(t, open, func(tmp string) error {
		dir := filepath.Dir(tmp)
		if err := os.WriteFile(filepath.Join(dir, "other"), []byte("OTHER"), 0o644); err != nil {
			return err
		}
		return os.Symlink("other", tmp)
	})
}

func readDirRefuses(t *testing.T, open Opener) {
	f := newFixture(t, open)
	must(t, os.MkdirAll(f.path("d"), 0o755))
	must(t, os.WriteFile(f.path("d/b"), nil, 0o644))
	must(t, os.WriteFile(f.path("d/a"), nil, 0o644))
	must(t, os.Symlink("d", f.path("dlink")))
	must(t, os.Symlink(filepath.Dir(f.secret), f.path("out")))
	must(t, mkfifo(f.path("fifo"), 0o644))
	r := f.open(t, open)
	ents, err := r.ReadDir("d")
	if err != nil || len(ents) != 2 || ents[0].Name() != "a" || ents[1].Name() != "b" {
		t.Errorf("ReadDir(d) = %v, %v; want a, b", ents, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for name, want := range map[string]error{"dlink": sandbox.ErrSymlink, "out": sandbox.ErrSymlink, "out/x": sandbox.ErrEscapes, "../outside": sandbox.ErrEscapes} {
			if _, err := r.ReadDir(name); !errors.Is(err, want) {
				t.Errorf("ReadDir(%s): %v, want %v", name, err, want)
			}
		}
		if _, err := r.ReadDir("fifo"); err == nil {
			t.Errorf("ReadDir(fifo) succeeded")
		}
	}()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatal("ReadDir blocked")
	}
}
