package verify

import (
	"bytes"
	"compress/gzip"
	"errors"
	"reflect"
	"testing"
	"time"
)

// storedRun is a base's run as the gate keeps it: a pass, a failure whose
// detail names the snapshot, and a unit.
func storedRun() *sideRun {
	s := newSideRun("/tmp/snap-1")
	s.add("go", SuiteResult{
		Results: []TestResult{
			{Test: Test{Language: "go", Package: "./num", Name: "TestA"}, Outcome: Pass, Duration: time.Millisecond},
			{Test: Test{Language: "go", Package: "./num", Name: "TestB"}, Outcome: Fail, Detail: "/tmp/snap-1/num/num_test.go:9: 3 != 4"},
		},
		Units:    []UnitResult{{Unit: "./num", Outcome: Pass}},
		Duration: 2 * time.Second,
	})
	return s
}

// TestStoredBaseReadsBackInAnotherSnapshot: a run read back is the run
// stored, its details naming the snapshot of the run reading it.
func TestStoredBaseReadsBackInAnotherSnapshot(t *testing.T) {
	data, err := encodeBase("k", storedRun())
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeBase("k", "/tmp/snap-2", data)
	if err != nil {
		t.Fatal(err)
	}
	want := storedRun()
	want.dir = "/tmp/snap-2"
	r := want.results["go:./num:TestB"]
	r.Detail = "/tmp/snap-2/num/num_test.go:9: 3 != 4"
	want.results["go:./num:TestB"] = r
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v\nwant %+v", got, want)
	}
}

// TestStoredBaseCorruptIsIgnored: a value that is not gzip, is cut short,
// is not the stored form, was stored under another key, or holds a
// result without a language or a unit under another name is refused, so
// the gate runs the base again.
func TestStoredBaseCorruptIsIgnored(t *testing.T) {
	good, err := encodeBase("k", storedRun())
	if err != nil {
		t.Fatal(err)
	}
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	for name, data := range map[string][]byte{
		"not gzip":      []byte("{}"),
		"cut short":     good[:len(good)/2],
		"not json":      gz("[1,2"),
		"unknown field": gz(`{"version":"` + baseKeyVersion + `","key":"k","extra":1}`),
		"old version":   gz(`{"version":"bcode-base-results-0","key":"k"}`),
		"no language":   gz(`{"version":"` + baseKeyVersion + `","key":"k","results":[{"test":{"name":"T"},"outcome":"pass"}]}`),
		"unit renamed":  gz(`{"version":"` + baseKeyVersion + `","key":"k","units":{"go:./a":{"unit":"./b","outcome":"pass"}}}`),
		"negative time": gz(`{"version":"` + baseKeyVersion + `","key":"k","duration_ns":-1}`),
	} {
		if _, err := decodeBase("k", "/d", data); !errors.Is(err, errBadStored) {
			t.Errorf("%s: %v, want errBadStored", name, err)
		}
	}
	if _, err := decodeBase("other", "/d", good); !errors.Is(err, errBadStored) {
		t.Errorf("a value of key k read as key other: %v, want errBadStored", err)
	}
}

// TestOnlyACleanBaseRunIsStored: a run that was retried, timed out, met an
// environment error or a refused report is never stored.
func TestOnlyACleanBaseRunIsStored(t *testing.T) {
	if !storable(storedRun(), false) {
		t.Fatal("a clean run is not storable")
	}
	if storable(storedRun(), true) {
		t.Error("a retried run is storable")
	}
	timedOut := storedRun()
	timedOut.units["go:./num"] = UnitResult{Unit: "./num", Outcome: Timeout}
	envErr := storedRun()
	envErr.env = []string{"go: not found"}
	refused := storedRun()
	refused.refused = []Finding{{Code: "refused_read"}}
	for name, s := range map[string]*sideRun{"timed out": timedOut, "environment error": envErr, "refused": refused, "none": nil} {
		if storable(s, false) {
			t.Errorf("%s: storable", name)
		}
	}
}
