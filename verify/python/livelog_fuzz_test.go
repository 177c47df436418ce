package python

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// FuzzParseLiveLog feeds arbitrary bytes to the reader of the live-log
// plugin's records, which the tests under judgement can write to (a test
// process shares the file descriptor and may be killed mid-line). It must
// never panic, read at most one case per line, give every case a status
// the classifier knows, and read the same log the same way twice. The seed
// corpus in testdata/fuzz/FuzzParseLiveLog holds real records, torn ones
// and hostile node ids.
func FuzzParseLiveLog(f *testing.F) {
	known := map[verify.Outcome]bool{verify.Pass: true, verify.Fail: true, verify.Skip: true, verify.ImportError: true, verify.MissingSymbol: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		cases := parseLiveLog(data)
		if lines := bytes.Count(data, []byte("\n")) + 1; len(cases) > lines {
			t.Fatalf("%d cases from %d lines", len(cases), lines)
		}
		for _, c := range cases {
			switch c.Status {
			case Passed, Skipped, Failure, Errored:
			default:
				t.Fatalf("case %+v has status %q", c, c.Status)
			}
			if c.Time < 0 {
				t.Fatalf("case %+v has a negative time", c)
			}
			if o, _ := Classify(c); !known[o] {
				t.Fatalf("case %+v classified as %q", c, o)
			}
			_ = c.key()
		}
		if again := parseLiveLog(data); !reflect.DeepEqual(again, cases) {
			t.Fatal("second parse differs")
		}
	})
}
