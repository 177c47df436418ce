package engine

import (
	"encoding/json"
	"errors"
	"time"
)

// ClaimKind is what a journal entry records.
type ClaimKind string

// The claims bcode makes about a task, each appended to the ledger's
// hash-chained journal when it is made.
const (
	ClaimVerdict    ClaimKind = "verdict"    // a task's verification was recorded
	ClaimExport     ClaimKind = "export"     // a task's change was exported (diff, attestation)
	ClaimApproval   ClaimKind = "approval"   // a user approved a change, naming its digest
	ClaimAcceptance ClaimKind = "acceptance" // a task's commits landed on the user's branch
	ClaimRejection  ClaimKind = "rejection"  // a task was thrown away
)

// Claim is one entry of the journal: an append-only, hash-chained record
// of what bcode claimed and when. Kind, TaskID and Payload are the
// caller's; the ledger fills in the rest when it appends the entry (see
// engine/ledger's journal.go for the hash's encoding).
type Claim struct {
	Seq           int64           `json:"seq"` // 1, 2, 3, ... with no gaps
	At            time.Time       `json:"at"`
	Kind          ClaimKind       `json:"kind"`
	TaskID        string          `json:"task_id"`
	Payload       json.RawMessage `json:"payload"`        // canonical JSON
	PayloadDigest string          `json:"payload_digest"` // sha256:<hex> of Payload
	Prev          string          `json:"prev"`           // the previous entry's Hash; "" for the first
	Hash          string          `json:"hash"`           // sha256:<hex> of the entry (see engine/ledger)
}

// Errors of accepting a reviewed change.
var (
	// ErrStaleDigest: the digest the user reviewed is not the digest of
	// the task's change now (its branch moved after the diff was shown);
	// nothing lands.
	ErrStaleDigest = errors.New("the change is not the one you reviewed")
	// ErrBadDigest: a change digest that is not sha256:<64 hex digits>.
	ErrBadDigest = errors.New("not a change digest")
)
