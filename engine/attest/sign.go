package attest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/bcode-dev/bcode/sandbox/git"
)

// digestAlgo is the in-toto digest name of a git.Digest's hash.
const digestAlgo = "sha256"

// Statement is the in-toto Statement v1 of p about the diff whose digest
// (git.Digest's "sha256:<hex>") is diffDigest: its subjects are the diff
// (named DiffSubject) and the head commit.
func Statement(diffDigest string, p *Predicate) (*intoto.Statement, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if !git.ValidDigest(diffDigest) {
		return nil, fmt.Errorf("%w: diff digest %q is not sha256:<64 lower-case hex digits>", ErrStatement, diffDigest)
	}
	sum := strings.TrimPrefix(diffDigest, git.DigestPrefix)
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, pred); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPredicate, err)
	}
	st := &intoto.Statement{
		Type: intoto.StatementTypeUri,
		Subject: []*intoto.ResourceDescriptor{
			{Name: DiffSubject, Digest: map[string]string{digestAlgo: sum}},
			{Name: "commit", Digest: map[string]string{string(intoto.AlgorithmGitCommit): p.Head}},
		},
		PredicateType: PredicateType,
		Predicate:     pred,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStatement, err)
	}
	return st, nil
}

// Sign puts the statement in a DSSE envelope signed with k and returns
// the envelope's JSON.
func Sign(ctx context.Context, k *Key, st *intoto.Statement) ([]byte, error) {
	payload, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	signer, err := dsse.NewEnvelopeSigner(signerVerifier{priv: k.priv, pub: k.Public()})
	if err != nil {
		return nil, err
	}
	env, err := signer.SignPayload(ctx, PayloadType, payload)
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
