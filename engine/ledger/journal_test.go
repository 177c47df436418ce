package ledger_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// TestClaimHashExample pins the worked example of docs/journal.md: the
// encoding there is the one the code hashes.
func TestClaimHashExample(t *testing.T) {
	c := &engine.Claim{Kind: engine.ClaimRejection, TaskID: "t1", Payload: json.RawMessage(`{"head": "4b7a", "by": "ann"}`)}
	if err := ledger.PrepareClaim(c); err != nil {
		t.Fatal(err)
	}
	ledger.SealClaim(c, nil, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if string(c.Payload) != `{"by":"ann","head":"4b7a"}` ||
		c.PayloadDigest != "sha256:18c065401f1339a4b53e78925535e7b8d3bff2c5fd38b27b027e6b92589b9aa8" ||
		c.Hash != "sha256:4b3cd066caecd68d536377e11832e75773a5735d647f3e6aebb375738648b30c" {
		t.Fatalf("the documented example hashes otherwise: %+v", c)
	}
}

// TestChainCheck: the check names the first entry that does not follow,
// whatever was done to it, and counts only those before it.
func TestChainCheck(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var chain []engine.Claim
	for i, k := range []engine.ClaimKind{engine.ClaimVerdict, engine.ClaimApproval, engine.ClaimAcceptance, engine.ClaimRejection} {
		c := &engine.Claim{Kind: k, TaskID: "t", Payload: json.RawMessage(`{"i":` + string(rune('0'+i)) + `}`)}
		if err := ledger.PrepareClaim(c); err != nil {
			t.Fatal(err)
		}
		var prev *engine.Claim
		if i > 0 {
			prev = &chain[i-1]
		}
		ledger.SealClaim(c, prev, at.Add(time.Duration(i)*time.Second))
		chain = append(chain, *c)
	}
	check := func(cs []engine.Claim) (int64, error) {
		var k ledger.ChainCheck
		for _, c := range cs {
			if err := k.Next(c); err != nil {
				return k.Count(), err
			}
		}
		return k.Count(), nil
	}
	if n, err := check(chain); err != nil || n != 4 {
		t.Fatalf("intact: %d %v", n, err)
	}
	edit := func(f func(cs []engine.Claim) []engine.Claim) []engine.Claim {
		return f(append([]engine.Claim(nil), chain...))
	}
	for _, c := range []struct {
		name    string
		cs      []engine.Claim
		seq, ok int64 // the entry named, how many checked before it
	}{
		{"first removed", chain[1:], 1, 0},
		{"reordered", edit(func(cs []engine.Claim) []engine.Claim { cs[1], cs[2] = cs[2], cs[1]; return cs }), 2, 1},
		{"repeated", edit(func(cs []engine.Claim) []engine.Claim { return append(cs[:2], cs[1:]...) }), 2, 2},
		{"time", edit(func(cs []engine.Claim) []engine.Claim { cs[3].At = cs[3].At.Add(time.Microsecond); return cs }), 4, 3},
		{"prev rewritten", edit(func(cs []engine.Claim) []engine.Claim { cs[2].Prev = ""; return cs }), 3, 2},
	} {
		n, err := check(c.cs)
		var b *ledger.BrokenChain
		if !errors.As(err, &b) || !errors.Is(err, ledger.ErrChainBroken) || b.Seq != c.seq || n != c.ok {
			t.Errorf("%s: %d checked, %v; want entry %d named after %d", c.name, n, err, c.seq, c.ok)
		}
	}
}
