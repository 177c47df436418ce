package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// The journal is a hash chain of engine.Claim entries, kept by every
// backend in a table of its own and checked here, once, for all of them.
//
// An entry's Hash is "sha256:" and the lower-case hex SHA-256 of the
// UTF-8 bytes
//
//	seq|time|kind|task|payload_digest|prev
//
// where seq is decimal with no leading zeros, time is the entry's time in
// UTC as 2006-01-02T15:04:05.000000000Z (always nine fraction digits; the
// ledger keeps whole microseconds), kind and task are as stored,
// payload_digest is "sha256:" and the hex SHA-256 of the payload's bytes,
// and prev is the previous entry's Hash ("" for entry 1). Only the task
// can hold a '|' (kinds are a fixed set, checked on append and on
// verify), and the fields around it have fixed forms, so the encoding has
// one reading. The payload is canonical JSON: object keys
// sorted, no insignificant white space, no HTML escaping.
//
// Changing any field of an entry changes its hash, which the next entry
// names; removing or reordering entries breaks the sequence or the links.
// Removing the newest entries leaves a shorter chain that is intact:
// comparing its head hash with an archived one (journal export) finds that.

// ErrChainBroken: the journal's entries do not form the chain they were
// appended as (see ChainCheck); the error says which entry and what.
var ErrChainBroken = errors.New("journal: chain broken")

// claimTimeLayout is the time in an entry's hashed encoding.
const claimTimeLayout = timeLayout

// claimKinds are the kinds an entry may have.
var claimKinds = map[engine.ClaimKind]bool{
	engine.ClaimVerdict: true, engine.ClaimExport: true, engine.ClaimApproval: true,
	engine.ClaimAcceptance: true, engine.ClaimRejection: true,
}

// PayloadDigest is "sha256:<hex>" of payload's bytes.
func PayloadDigest(payload []byte) string {
	sum := sha256.Sum256(payload)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ClaimHash is the hash an entry must have: see the encoding above.
func ClaimHash(c *engine.Claim) string {
	line := strings.Join([]string{strconv.FormatInt(c.Seq, 10), c.At.UTC().Format(claimTimeLayout),
		string(c.Kind), c.TaskID, c.PayloadDigest, c.Prev}, "|")
	return PayloadDigest([]byte(line))
}

// CanonicalJSON re-encodes a JSON value with its object keys sorted, no
// insignificant white space and no HTML escaping; numbers keep their text.
func CanonicalJSON(raw []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// PrepareClaim checks a claim about to be appended and makes its payload
// canonical (an empty payload is {}); every backend calls it.
func PrepareClaim(c *engine.Claim) error {
	if c == nil {
		return invalid("journal: claim is nil")
	}
	if !claimKinds[c.Kind] {
		return invalid("journal: unknown claim kind %q", c.Kind)
	}
	if len(bytes.TrimSpace(c.Payload)) == 0 {
		c.Payload = json.RawMessage("{}")
	}
	canon, err := CanonicalJSON(c.Payload)
	if err != nil {
		return invalid("journal: the payload of a %s claim is not JSON: %v", c.Kind, err)
	}
	c.Payload = canon
	return nil
}

// SealClaim fills in a prepared claim's place in the chain: it follows
// prev (nil: it is the first entry) and is made at (kept to the
// microsecond, as every backend stores it).
func SealClaim(c *engine.Claim, prev *engine.Claim, at time.Time) {
	c.Seq, c.Prev = 1, ""
	if prev != nil {
		c.Seq, c.Prev = prev.Seq+1, prev.Hash
	}
	c.At = at.UTC().Truncate(time.Microsecond)
	c.PayloadDigest = PayloadDigest(c.Payload)
	c.Hash = ClaimHash(c)
}

// ChainCheck verifies a journal read in seq order, one entry at a time,
// so that a long one is never held in memory. The zero value expects
// entry 1.
type ChainCheck struct {
	n    int64
	last *engine.Claim
}

// Count is how many entries have been checked and found intact.
func (k *ChainCheck) Count() int64 { return k.n }

// Head is the hash of the last entry found intact ("" before the first).
func (k *ChainCheck) Head() string {
	if k.last == nil {
		return ""
	}
	return k.last.Hash
}

// Next checks the next entry against the ones before it. An error wraps
// ErrChainBroken and names the first entry that was changed, removed or
// reordered; the check cannot go on after one.
func (k *ChainCheck) Next(c engine.Claim) error {
	want, prevHash := int64(1), ""
	if k.last != nil {
		want, prevHash = k.last.Seq+1, k.last.Hash
	}
	switch {
	case c.Seq > want:
		return broken(want, "it is missing (removed): entry %d comes next", c.Seq)
	case c.Seq < want:
		return broken(c.Seq, "it comes again, or out of order, after entry %d", want-1)
	case PayloadDigest(c.Payload) != c.PayloadDigest:
		return broken(c.Seq, "its payload was changed (its digest is %s, the entry says %s)", PayloadDigest(c.Payload), c.PayloadDigest)
	case !claimKinds[c.Kind]:
		// Also what keeps the encoding's one reading: no kind has a '|'.
		return broken(c.Seq, "its kind %q is not one bcode writes (it was changed)", c.Kind)
	case c.Prev != prevHash:
		return broken(c.Seq, "it does not follow entry %d (it names %q as the previous hash, entry %d's is %q): entries were removed, inserted or reordered", want-1, c.Prev, want-1, prevHash)
	case ClaimHash(&c) != c.Hash:
		return broken(c.Seq, "its time, kind, task or payload digest was changed (its contents hash to %s, the entry says %s)", ClaimHash(&c), c.Hash)
	}
	k.n++
	k.last = &c
	return nil
}

// BrokenChain is the error ChainCheck returns: the sequence number of the
// first entry that does not check, and what does not match.
type BrokenChain struct {
	Seq  int64
	What string
}

func (e *BrokenChain) Error() string {
	return fmt.Sprintf("%v at entry %d: %s", ErrChainBroken, e.Seq, e.What)
}

func (e *BrokenChain) Unwrap() error { return ErrChainBroken }

func broken(seq int64, format string, args ...any) error {
	return &BrokenChain{Seq: seq, What: fmt.Sprintf(format, args...)}
}

// VerdictClaim is the verdict claim a task's recorded gate run makes: the
// run's identity and verdict, and the digest of its full report (which
// stays in verification_runs). v.ID must be set.
func VerdictClaim(v *engine.VerificationRun) *engine.Claim {
	payload, _ := json.Marshal(map[string]any{
		"run": v.ID, "attempt": v.Attempt, "repo": v.Repo, "base": v.Base, "head": v.Head,
		"verdict": v.Verdict, "report_digest": PayloadDigest(v.Report), "duration_ms": v.DurationMS,
	})
	return &engine.Claim{Kind: engine.ClaimVerdict, TaskID: v.TaskID, Payload: payload}
}
