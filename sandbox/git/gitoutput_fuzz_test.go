package git

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseRawDiff feeds arbitrary bytes to the reader of
// `diff-tree -z --raw`. The paths in that output are whatever names a
// change gave its files, so the parser must return entries or an error,
// never panic, and never report an entry the input does not hold. The seed
// corpus in testdata/fuzz/FuzzParseRawDiff is real git output.
func FuzzParseRawDiff(f *testing.F) {
	f.Fuzz(func(t *testing.T, out []byte) {
		entries, err := parseRawDiff(out)
		if err != nil {
			if entries != nil {
				t.Fatalf("entries %+v returned with error %v", entries, err)
			}
			return
		}
		if 2*len(entries) > bytes.Count(out, []byte{0})+1 {
			t.Fatalf("%d entries from %d NUL-separated fields", len(entries), bytes.Count(out, []byte{0})+1)
		}
		for _, e := range entries {
			if !strings.ContainsRune("AMDT", rune(e.Status)) || strings.ContainsRune(e.Path, 0) {
				t.Fatalf("entry %+v", e)
			}
			// An added path has no old mode, a deleted one no new mode.
			if (e.OldMode == "") != (e.Status == 'A') || (e.NewMode == "") != (e.Status == 'D') {
				t.Fatalf("modes of %+v do not match its status", e)
			}
		}
		again, _ := parseRawDiff(out)
		if !reflect.DeepEqual(again, entries) {
			t.Fatal("second parse differs")
		}
	})
}

// FuzzParseIndexDebug feeds arbitrary bytes to the reader of
// `ls-files -z --stage --debug`, whose paths come from the repository. It
// must return entries or an error, never panic. The seed corpus in
// testdata/fuzz/FuzzParseIndexDebug is real git output.
func FuzzParseIndexDebug(f *testing.F) {
	f.Fuzz(func(t *testing.T, out []byte) {
		entries, err := parseIndexDebug(out)
		if err != nil {
			if entries != nil {
				t.Fatalf("entries %+v returned with error %v", entries, err)
			}
			return
		}
		if len(entries) > bytes.Count(out, []byte{0}) {
			t.Fatalf("%d entries from %d NUL-terminated records", len(entries), bytes.Count(out, []byte{0}))
		}
		for _, e := range entries {
			if strings.ContainsRune(e.path, 0) {
				t.Fatalf("path %q holds a NUL", e.path)
			}
		}
	})
}
