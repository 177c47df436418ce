package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// checkChain reads the whole journal through Claims, in pages of page,
// runs the chain check over it and returns it.
func checkChain(t *testing.T, s ledger.Store, page int) []engine.Claim {
	t.Helper()
	var (
		all   []engine.Claim
		check ledger.ChainCheck
		after int64
	)
	for {
		cs := must[[]engine.Claim](t)(s.Claims(context.Background(), after, page))
		for _, c := range cs {
			if err := check.Next(c); err != nil {
				t.Fatalf("the journal as appended does not check: %v", err)
			}
		}
		all = append(all, cs...)
		if len(cs) == 0 || page <= 0 {
			break
		}
		after = cs[len(cs)-1].Seq
	}
	if check.Count() != int64(len(all)) {
		t.Fatalf("checked %d of %d entries", check.Count(), len(all))
	}
	return all
}

// testJournal: claims are appended as one chain (seq 1, 2, ... each
// naming the previous hash), with canonical payloads, together with the
// event they record; a fenced append by a stale lease writes neither; a
// task's gate run journals its verdict.
func testJournal(t *testing.T, b Backend) {
	ctx := context.Background()
	s, c := open1(t, b)
	tk := newTask(t, s, "/r", "g")
	l := acquire(t, s, tk.ID, holderA, time.Minute)

	first := &engine.Claim{Kind: engine.ClaimApproval, TaskID: tk.ID, Payload: json.RawMessage(`{"z": 1, "a": "<b>", "m": [2, 1]}`)}
	ev := &engine.Event{TaskID: tk.ID, Kind: "task.accepted", Data: json.RawMessage(`{"by": "ann"}`)}
	second := &engine.Claim{Kind: engine.ClaimAcceptance, TaskID: tk.ID}
	ok(t, s.AppendClaims(ctx, &l, ev, first, second))
	if string(first.Payload) != `{"a":"<b>","m":[2,1],"z":1}` || string(second.Payload) != `{}` {
		t.Fatalf("payloads not canonical: %s, %s", first.Payload, second.Payload)
	}
	if first.Seq != 1 || first.Prev != "" || second.Seq != 2 || second.Prev != first.Hash || !first.At.Equal(c.Now()) {
		t.Fatalf("chain: %+v then %+v", first, second)
	}
	if first.Hash != ledger.ClaimHash(first) || first.PayloadDigest != ledger.PayloadDigest(first.Payload) {
		t.Fatalf("claim 1 sealed wrong: %+v", first)
	}
	if ev.Seq == 0 || ev.Fence != l.Fence {
		t.Fatalf("event not written back: %+v", ev)
	}
	evs := must[[]engine.Event](t)(s.Events(ctx, tk.ID, 0, 0))
	if evs[len(evs)-1].Kind != "task.accepted" {
		t.Fatalf("the event was not appended with the claims: %+v", evs)
	}

	// A lease that was taken over writes no claim and no event.
	c.Advance(2 * time.Minute)
	acquire(t, s, tk.ID, holderB, time.Minute)
	stale := &engine.Claim{Kind: engine.ClaimRejection, TaskID: tk.ID}
	if err := s.AppendClaims(ctx, &l, &engine.Event{TaskID: tk.ID, Kind: "task.rejected"}, stale); !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("stale lease: %v, want ErrFenced", err)
	}
	if n := len(must[[]engine.Event](t)(s.Events(ctx, tk.ID, 0, 0))); n != len(evs) || stale.Seq != 0 {
		t.Fatalf("a fenced append wrote: %d events (was %d), claim %+v", n, len(evs), stale)
	}

	// A task's gate run is a verdict claim; a bare bcode check is not.
	run := &engine.VerificationRun{TaskID: tk.ID, Attempt: 1, Repo: "/r", Base: "b", Head: "h", Verdict: "verified", Report: json.RawMessage(`{"x":1}`)}
	must[int64](t)(s.RecordVerification(ctx, run))
	must[int64](t)(s.RecordVerification(ctx, &engine.VerificationRun{Repo: "/r", Base: "b", Head: "h", Verdict: "verified"}))
	ok(t, s.AppendClaims(ctx, nil, nil, &engine.Claim{Kind: engine.ClaimExport, TaskID: tk.ID, Payload: json.RawMessage(`null`)}))

	all := checkChain(t, s, 2)
	if len(all) != 4 || all[2].Kind != engine.ClaimVerdict || all[3].Kind != engine.ClaimExport {
		t.Fatalf("journal: %+v", all)
	}
	var verdict map[string]any
	ok(t, json.Unmarshal(all[2].Payload, &verdict))
	if verdict["run"] != float64(run.ID) || verdict["verdict"] != "verified" || verdict["head"] != "h" ||
		verdict["report_digest"] != ledger.PayloadDigest(run.Report) {
		t.Fatalf("verdict claim: %s", all[2].Payload)
	}
	if got := must[[]engine.Claim](t)(s.Claims(ctx, 2, 1)); len(got) != 1 || got[0].Seq != 3 || got[0].Hash != all[2].Hash {
		t.Fatalf("Claims(2, 1): %+v", got)
	}
}

// testJournalInvalid: a claim of an unknown kind, or whose payload is not
// JSON, is refused and nothing is appended.
func testJournalInvalid(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := open1(t, b)
	for _, c := range []*engine.Claim{
		{Kind: "gossip"},
		{Kind: engine.ClaimExport, Payload: json.RawMessage(`{"a":`)},
		{Kind: engine.ClaimExport, Payload: json.RawMessage(`1 2`)},
		nil,
	} {
		if err := s.AppendClaims(ctx, nil, nil, c); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("AppendClaims(%+v): %v, want ErrInvalid", c, err)
		}
	}
	if err := s.AppendClaims(ctx, nil, &engine.Event{TaskID: "nope", Kind: "k"}, &engine.Claim{Kind: engine.ClaimExport}); err == nil {
		t.Error("an event of no task was appended")
	}
	if cs := must[[]engine.Claim](t)(s.Claims(ctx, 0, 0)); len(cs) != 0 {
		t.Fatalf("refused appends left entries: %+v", cs)
	}
}

// testJournalRace: appenders on several handles at once (several runners,
// several machines) still make one chain with no gaps.
func testJournalRace(t *testing.T, b Backend) {
	ctx := context.Background()
	const appenders, each = 6, 8
	hs, _ := handles(t, b, appenders)
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	for i := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				c := &engine.Claim{Kind: engine.ClaimExport, TaskID: fmt.Sprint("t", i), Payload: json.RawMessage(fmt.Sprintf(`{"j":%d}`, j))}
				if err := hs[i].AppendClaims(ctx, nil, nil, c); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if all := checkChain(t, hs[0], 0); len(all) != appenders*each {
		t.Fatalf("%d entries, want %d", len(all), appenders*each)
	}
}
