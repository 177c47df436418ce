package verify

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// toolchainFake is scripted naming which files decide its toolchain.
type toolchainFake struct{ scripted }

func (toolchainFake) DecidesToolchain(p string) bool { return p == ".python-version" }

// beforeRun is a checkRun whose base is keyed and whose before snapshot
// lays overlay over the base, for the fake language's unit "t".
func beforeRun(a Adapter, overlay ...FileChange) *checkRun {
	done := make(chan struct{})
	close(done)
	return &checkRun{
		g:           &Gate{Adapters: []Adapter{a}, BaseResults: memResults{}},
		baseKeyDone: done, baseKey: "base-key", beforeDir: "/tmp/before",
		overBase: overlay, units: map[string][]string{"fake": {"t"}},
	}
}

type memResults struct{}

func (memResults) Get(context.Context, string) ([]byte, time.Time, bool, error) {
	return nil, time.Time{}, false, nil
}
func (memResults) Put(context.Context, string, []byte) error { return nil }

// TestBeforeKeyCoversTheOverlayAndUnits: the key changes with a byte of a
// file laid over the base, its mode, its deletion, the units and the
// base's key, and not with the order the overlay lists its files in; a
// file that decides the toolchain, or an adapter that cannot say which
// do, leaves the snapshot unkeyed.
func TestBeforeKeyCoversTheOverlayAndUnits(t *testing.T) {
	a := &toolchainFake{}
	f1 := FileChange{Path: "x_test", Head: []byte("def test_a(): assert f() == 1\n"), HeadMode: "100644"}
	f2 := FileChange{Path: "conftest", Head: []byte(""), HeadMode: "100644"}
	key := func(r *checkRun) string {
		t.Helper()
		k, err := r.beforeKey()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := key(beforeRun(a, f1, f2))
	if key(beforeRun(a, f2, f1)) != k {
		t.Error("the overlay's order changed the key")
	}
	byte1, mode, gone := f1, f1, f1
	byte1.Head = []byte("def test_a(): assert f() == 2\n")
	mode.HeadMode = "100755"
	gone.Head, gone.HeadMode = nil, ""
	otherUnits, otherBase := beforeRun(a, f1, f2), beforeRun(a, f1, f2)
	otherUnits.units = map[string][]string{"fake": {"t", "u"}}
	otherBase.baseKey = "another base"
	for name, r := range map[string]*checkRun{
		"a byte of a test file": beforeRun(a, byte1, f2), "its mode": beforeRun(a, mode, f2), "its deletion": beforeRun(a, gone, f2),
		"another unit": otherUnits, "another base key": otherBase,
	} {
		if key(r) == k {
			t.Errorf("%s: the same key", name)
		}
	}
	pinned := FileChange{Path: ".python-version", Head: []byte("3.12\n"), HeadMode: "100644"}
	if _, err := beforeRun(a, f1, pinned).beforeKey(); !errors.Is(err, ErrUnkeyed) || !strings.Contains(err.Error(), "decides the fake toolchain") {
		t.Errorf("a file that decides the toolchain: %v", err)
	}
	if _, err := beforeRun(&scripted{}, f1).beforeKey(); !errors.Is(err, ErrUnkeyed) {
		t.Errorf("an adapter that does not name its toolchain's files: %v", err)
	}
	unkeyedBase := beforeRun(a, f1)
	unkeyedBase.baseKey, unkeyedBase.baseKeyErr = "", ErrUnkeyed
	if _, err := unkeyedBase.beforeKey(); !errors.Is(err, ErrUnkeyed) {
		t.Errorf("an unkeyed base: %v", err)
	}
}

// TestStoredBeforeKeepsItsRepeats: a run stored with its repeat rounds
// reads back with them, their details naming the snapshot reading them;
// neither form reads back as the other.
func TestStoredBeforeKeepsItsRepeats(t *testing.T) {
	s := storedRun()
	rep := TestResult{Test: Test{Language: "go", Package: "./num", Name: "TestB"}, Outcome: Fail, Detail: "/tmp/snap-1/num/num_test.go:9: 3 != 4"}
	data, err := encodeRun(beforeKeyVersion, "k", s, []TestResult{rep, rep})
	if err != nil {
		t.Fatal(err)
	}
	_, repeats, err := decodeRun(beforeKeyVersion, "k", "/tmp/snap-2", data)
	if err != nil || len(repeats) != 2 || repeats[1].Detail != "/tmp/snap-2/num/num_test.go:9: 3 != 4" {
		t.Fatalf("read back %+v, %v", repeats, err)
	}
	if _, err := decodeBase("k", "/d", data); !errors.Is(err, errBadStored) {
		t.Errorf("a before run read as a base's: %v", err)
	}
	base, _ := encodeBase("k", s)
	if _, _, err := decodeRun(beforeKeyVersion, "k", "/d", base); !errors.Is(err, errBadStored) {
		t.Errorf("a base's run read as a before run: %v", err)
	}
}
