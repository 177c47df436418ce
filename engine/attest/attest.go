// Package attest makes and checks bcode's attestations: an in-toto
// Statement v1 whose subjects are a task's canonical diff (by its SHA-256)
// and its head commit, and whose predicate (PredicateType) is what bcode's
// gate said of that head, in a DSSE envelope signed with the ed25519 key of
// bcode's state directory. Checking one (Verify) needs no repository, no
// ledger and runs nothing: the envelope, the public key and the diff are
// enough, so CI can check a patch without verifying it again.
//
// The formats are the maintained libraries' (github.com/in-toto/attestation
// for the statement, github.com/secure-systems-lab/go-securesystemslib/dsse
// for the envelope); this package only chooses what goes in them.
package attest

import "errors"

const (
	// PredicateType names the predicate: bcode's verification record, v1.
	// A verifier refuses any other type; a new field means a new version.
	PredicateType = "https://bcode.dev/attestation/verification/v1"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// DiffSubject is the name of the diff's subject in the statement.
	DiffSubject = "change.diff"
)

// Errors Verify and the key functions return; each says, as data, why an
// attestation was refused.
var (
	// ErrEnvelope: the file is not a DSSE envelope (not JSON, truncated,
	// a payload that is not base64).
	ErrEnvelope = errors.New("attest: not a DSSE envelope")
	// ErrPayloadType: the envelope carries something other than an
	// in-toto statement.
	ErrPayloadType = errors.New("attest: wrong payload type")
	// ErrUnsigned: the envelope has no signature at all.
	ErrUnsigned = errors.New("attest: envelope is not signed")
	// ErrSignature: no signature verifies with the key: the payload was
	// changed after signing, or another key signed it.
	ErrSignature = errors.New("attest: signature does not verify")
	// ErrStatement: the payload is not a well-formed in-toto Statement v1
	// with bcode's two subjects.
	ErrStatement = errors.New("attest: malformed statement")
	// ErrPredicateType: the statement's predicate is not bcode's.
	ErrPredicateType = errors.New("attest: unknown predicate type")
	// ErrPredicate: the predicate lacks a required field or has one bcode
	// does not know.
	ErrPredicate = errors.New("attest: malformed predicate")
	// ErrDiffMismatch: the diff's SHA-256 is not the one attested.
	ErrDiffMismatch = errors.New("attest: diff does not match the attested digest")
	// ErrKeyExposed: the private key file can be read by others; it is
	// refused, as ssh refuses such a key.
	ErrKeyExposed = errors.New("attest: private key readable by others")
	// ErrNoKey: there is no signing key in the state directory yet.
	ErrNoKey = errors.New("attest: no key")
	// ErrKey: a key file is not a key bcode can use.
	ErrKey = errors.New("attest: bad key")
	// ErrInput: an input or output file cannot be used (missing, not a
	// regular file, too large).
	ErrInput = errors.New("attest: bad file")
)

// ErrNoChange: the task has no change to export (it never ran, it was
// rejected, or its branch's tree is still its base's).
var ErrNoChange = errors.New("attest: the task has no change to export")
