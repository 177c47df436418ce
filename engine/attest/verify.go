package attest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/bcode-dev/bcode/sandbox/git"
)

// Verified is what a valid attestation says.
type Verified struct {
	KeyID      string    `json:"keyid"`       // the key whose signature verified
	DiffDigest string    `json:"diff_digest"` // sha256:<hex>, the diff subject's
	DiffCheck  bool      `json:"diff_checked"`
	Predicate  Predicate `json:"predicate"`
}

// Verify checks an attestation offline: the envelope is a DSSE envelope of
// an in-toto statement signed by pub; the statement is a Statement v1
// with bcode's predicate type, a diff subject and a commit subject; the
// predicate is well formed; and, when diff is not nil, its SHA-256 is the
// diff subject's. It runs nothing and reads no repository. Each refusal
// wraps one of the package's errors.
func Verify(ctx context.Context, envelope, diff []byte, pub ed25519.PublicKey) (*Verified, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: a public key of %d bytes, want %d", ErrKey, len(pub), ed25519.PublicKeySize)
	}
	payload, keyID, err := openEnvelope(ctx, envelope, pub)
	if err != nil {
		return nil, err
	}
	st, err := decodeStatement(payload)
	if err != nil {
		return nil, err
	}
	v := &Verified{KeyID: keyID}
	if err := v.readPredicate(st); err != nil {
		return nil, err
	}
	if err := v.readSubjects(st); err != nil {
		return nil, err
	}
	if diff != nil {
		if got := git.Digest(diff); got != v.DiffDigest {
			return nil, fmt.Errorf("%w: the diff is %s, the attestation says %s", ErrDiffMismatch, got, v.DiffDigest)
		}
		v.DiffCheck = true
	}
	return v, nil
}

// openEnvelope checks the envelope's form and signature and returns its
// payload and the id of the key that signed it.
func openEnvelope(ctx context.Context, data []byte, pub ed25519.PublicKey) ([]byte, string, error) {
	var env dsse.Envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return nil, "", fmt.Errorf("%w: truncated (the JSON ends early)", ErrEnvelope)
	} else if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrEnvelope, err)
	}
	if dec.More() {
		return nil, "", fmt.Errorf("%w: data after the envelope", ErrEnvelope)
	}
	if env.PayloadType != PayloadType {
		return nil, "", fmt.Errorf("%w: %q, want %q", ErrPayloadType, env.PayloadType, PayloadType)
	}
	if _, err := env.DecodeB64Payload(); err != nil {
		return nil, "", fmt.Errorf("%w: the payload is not base64", ErrEnvelope)
	}
	if len(env.Signatures) == 0 {
		return nil, "", ErrUnsigned
	}
	ev, err := dsse.NewEnvelopeVerifier(signerVerifier{pub: pub})
	if err != nil {
		return nil, "", err
	}
	accepted, payload, err := ev.VerifyAndDecode(ctx, &env)
	if err != nil || len(accepted) == 0 {
		return nil, "", fmt.Errorf("%w with key %s (the envelope names %s): it was changed after signing, or another key signed it",
			ErrSignature, KeyID(pub), signedBy(env))
	}
	return payload, accepted[0].KeyID, nil
}

// signedBy lists the key ids an envelope's signatures name.
func signedBy(env dsse.Envelope) string {
	var ids []string
	for _, s := range env.Signatures {
		id := s.KeyID
		if id == "" {
			id = "no key id"
		}
		ids = append(ids, id)
	}
	return fmt.Sprint(ids)
}

// decodeStatement parses an in-toto Statement v1 (not the legacy v0.1
// the library also takes) with bcode's predicate type.
func decodeStatement(payload []byte) (*intoto.Statement, error) {
	st := &intoto.Statement{}
	if err := protojson.Unmarshal(payload, st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStatement, err)
	}
	if st.GetType() != intoto.StatementTypeUri {
		return nil, fmt.Errorf("%w: statement type %q, want %q", ErrStatement, st.GetType(), intoto.StatementTypeUri)
	}
	if st.GetPredicateType() != PredicateType {
		return nil, fmt.Errorf("%w: %q, want %q", ErrPredicateType, st.GetPredicateType(), PredicateType)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStatement, err)
	}
	return st, nil
}

// readPredicate decodes the predicate strictly (a field bcode does not
// know is refused) and validates it.
func (v *Verified) readPredicate(st *intoto.Statement) error {
	raw, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPredicate, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v.Predicate); err != nil {
		return fmt.Errorf("%w: %v", ErrPredicate, err)
	}
	return v.Predicate.Validate()
}

// readSubjects finds the two subjects: exactly one diff with a SHA-256,
// exactly one commit, and that commit is the predicate's head.
func (v *Verified) readSubjects(st *intoto.Statement) error {
	var diffs, commits []string
	for _, s := range st.GetSubject() {
		if s.GetName() == DiffSubject {
			if sum, ok := s.GetDigest()[digestAlgo]; ok {
				diffs = append(diffs, sum)
			}
		}
		if c, ok := s.GetDigest()[string(intoto.AlgorithmGitCommit)]; ok {
			commits = append(commits, c)
		}
	}
	if len(diffs) != 1 || len(st.GetSubject()) != 2 || len(commits) != 1 {
		return fmt.Errorf("%w: want two subjects, %s with a %s digest and a commit; got %d subjects", ErrStatement, DiffSubject, digestAlgo, len(st.GetSubject()))
	}
	if commits[0] != v.Predicate.Head {
		return fmt.Errorf("%w: the commit subject %s is not the predicate's head %s", ErrStatement, commits[0], v.Predicate.Head)
	}
	v.DiffDigest = git.DigestPrefix + diffs[0]
	return nil
}
