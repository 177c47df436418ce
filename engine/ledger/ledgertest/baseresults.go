package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/ledger"
)

// testBaseResults: a base's results read back byte for byte with when they
// were stored, under their key only; a Put replaces; a missing key is
// ErrNoBaseResult; an empty key and a value over the cap are refused; the
// oldest rows past MaxBaseResults are pruned, and another handle (another
// runner) reads what one stored.
func testBaseResults(t *testing.T, b Backend) {
	ctx := context.Background()
	c := NewClock()
	open := b(t)
	s, other := open(Options{Now: c.Now}), open(Options{Now: c.Now})
	br, ok1 := s.(ledger.BaseResults)
	br2, ok2 := other.(ledger.BaseResults)
	if !ok1 || !ok2 {
		t.Fatalf("%T does not implement ledger.BaseResults", s)
	}
	if _, _, err := br.BaseResult(ctx, "k1"); !errors.Is(err, ledger.ErrNoBaseResult) {
		t.Fatalf("BaseResult of an empty store: %v, want ErrNoBaseResult", err)
	}
	v1 := []byte{0, 1, 2, 0xff, '{'}
	ok(t, br.PutBaseResult(ctx, "k1", v1))
	ok(t, br.PutBaseResult(ctx, "k2", []byte("other")))
	got, at, err := br2.BaseResult(ctx, "k1")
	if err != nil || !bytes.Equal(got, v1) || !at.Equal(c.Now()) {
		t.Fatalf("BaseResult k1 from another handle: %q %v %v, want %q at %v", got, at, err, v1, c.Now())
	}
	if _, _, err := br.BaseResult(ctx, "k1x"); !errors.Is(err, ledger.ErrNoBaseResult) {
		t.Fatalf("BaseResult of a key never stored: %v, want ErrNoBaseResult", err)
	}
	c.Advance(time.Minute)
	ok(t, br2.PutBaseResult(ctx, "k1", []byte("new")))
	if got, at, err := br.BaseResult(ctx, "k1"); err != nil || string(got) != "new" || !at.Equal(c.Now()) {
		t.Fatalf("BaseResult after a replacing Put: %q %v %v", got, at, err)
	}
	if got, _, err := br.BaseResult(ctx, "k2"); err != nil || string(got) != "other" {
		t.Fatalf("BaseResult k2 after k1 was replaced: %q %v", got, err)
	}
	if err := br.PutBaseResult(ctx, "", v1); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("PutBaseResult with no key: %v, want ErrInvalid", err)
	}
	big := bytes.Repeat([]byte{'x'}, ledger.MaxBaseResultSize+1)
	if err := br.PutBaseResult(ctx, "big", big); !errors.Is(err, ledger.ErrBaseResultTooLarge) {
		t.Errorf("PutBaseResult over the cap: %v, want ErrBaseResultTooLarge", err)
	}
	testBaseResultsPruned(t, br, c)
}

// testBaseResultsPruned fills the table past MaxBaseResults, one row a
// second: the oldest go, the newest stay.
func testBaseResultsPruned(t *testing.T, br ledger.BaseResults, c *Clock) {
	ctx := context.Background()
	for i := range ledger.MaxBaseResults {
		c.Advance(time.Second)
		ok(t, br.PutBaseResult(ctx, fmt.Sprintf("fill-%03d", i), []byte(strings.Repeat("r", i))))
	}
	for _, gone := range []string{"k1", "k2"} {
		if _, _, err := br.BaseResult(ctx, gone); !errors.Is(err, ledger.ErrNoBaseResult) {
			t.Errorf("BaseResult %s after %d newer rows: %v, want pruned", gone, ledger.MaxBaseResults, err)
		}
	}
	for _, kept := range []string{"fill-000", fmt.Sprintf("fill-%03d", ledger.MaxBaseResults-1)} {
		if _, _, err := br.BaseResult(ctx, kept); err != nil {
			t.Errorf("BaseResult %s, one of the %d newest: %v", kept, ledger.MaxBaseResults, err)
		}
	}
}
