package testlog_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify/testlog"
)

// TestAuthentic: only lines signed under the run's key count; a line
// signed under another key, unsigned, or edited after signing is counted
// as forged; a torn last line is dropped without counting.
func TestAuthentic(t *testing.T) {
	key, other := bytes.Repeat([]byte("k"), testlog.KeyBytes), bytes.Repeat([]byte("o"), testlog.KeyBytes)
	good := `{"nodeid": "t.py::a", "when": "call", "outcome": "failed"}`
	signed := string(testlog.Sign(key, []byte(good)))
	data := signed +
		string(testlog.Sign(other, []byte(`{"nodeid": "t.py::b", "outcome": "passed"}`))) +
		`{"nodeid": "t.py::c", "outcome": "passed"}` + "\n" +
		strings.Replace(signed, "failed", "passed", 1) +
		"not hex " + good + "\n" +
		string(testlog.Sign(key, []byte(`{"nodeid": "t.py::d"}`)))[:40]
	log, forged := testlog.Authentic([]byte(data), key)
	if string(log) != good+"\n" || forged != 4 {
		t.Fatalf("log %q, forged %d; want only the first line and 4 forged", log, forged)
	}
}

func TestNewKeyDiffers(t *testing.T) {
	a, err := testlog.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := testlog.NewKey()
	if len(a) != testlog.KeyBytes || bytes.Equal(a, b) {
		t.Fatalf("keys %x %x", a, b)
	}
}
