package app_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// TestRecordClaim: an export's claim recorded through the facade is an
// entry of the journal, which verifies and round-trips through its
// export; a claim of no known kind is refused and nothing is appended.
func TestRecordClaim(t *testing.T) {
	ctx := context.Background()
	eng := app.Open(app.Options{LedgerPath: filepath.Join(t.TempDir(), "ledger.db"), By: "tester"})
	t.Cleanup(func() { eng.Close() })
	if res, err := eng.JournalVerify(ctx); err != nil || res.Entries != 0 || res.Head != "" {
		t.Fatalf("no ledger yet: %+v %v", res, err)
	}
	c, err := eng.RecordClaim(ctx, engine.ClaimExport, "t1", map[string]any{"diff_digest": "sha256:00", "to": "<a&b>"})
	if err != nil || c.Seq != 1 || string(c.Payload) != `{"diff_digest":"sha256:00","to":"<a&b>"}` {
		t.Fatalf("RecordClaim: %+v %v", c, err)
	}
	if _, err := eng.RecordClaim(ctx, "gossip", "t1", nil); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("an unknown kind: %v", err)
	}
	c2, err := eng.RecordClaim(ctx, engine.ClaimExport, "t2", []int{1})
	if err != nil || c2.Prev != c.Hash {
		t.Fatalf("second claim: %+v %v", c2, err)
	}
	res, err := eng.JournalVerify(ctx)
	if err != nil || res.Entries != 2 || res.Head != c2.Hash {
		t.Fatalf("JournalVerify: %+v %v", res, err)
	}
	var b bytes.Buffer
	if n, err := eng.JournalExport(ctx, &b); err != nil || n != 2 || strings.Count(b.String(), "\n") != 2 {
		t.Fatalf("JournalExport: %d %v\n%s", n, err, b.String())
	}
	if res, err := app.VerifyJournalExport(&b); err != nil || res.Entries != 2 || res.Head != c2.Hash {
		t.Fatalf("VerifyJournalExport: %+v %v", res, err)
	}
}
