package secrets

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseLogPatch feeds arbitrary bytes to the reader of
// `git log -p -U0`, whose content is every line the scanned history ever
// added. It must never panic or fail on input from memory, emit only text
// the input added (each emitted line was a "+" line), and read the same log
// the same way twice. The seed corpus in testdata/fuzz/FuzzParseLogPatch is
// real git output and the header look-alikes of TestParseLogPatch.
func FuzzParseLogPatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func() []addedBlock {
			var blocks []addedBlock
			if err := parseLogPatch(bytes.NewReader(data), func(b addedBlock) { blocks = append(blocks, b) }); err != nil {
				t.Fatalf("reading from memory failed: %v", err)
			}
			return blocks
		}
		blocks := read()
		added := map[string]bool{}
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "+") {
				added[l[1:]] = true
			}
		}
		prev := -1
		for _, b := range blocks {
			if b.seq < prev || b.path == "" || b.text == "" || !strings.HasSuffix(b.text, "\n") {
				t.Fatalf("block %+v after commit %d", b, prev)
			}
			prev = b.seq
			for _, l := range strings.Split(strings.TrimSuffix(b.text, "\n"), "\n") {
				if !added[l] {
					t.Fatalf("block %+v holds %q, which no \"+\" line added", b, l)
				}
			}
		}
		if again := read(); !reflect.DeepEqual(again, blocks) {
			t.Fatal("second parse differs")
		}
	})
}
