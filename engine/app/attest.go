package app

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/attest"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// What the surfaces name of engine/attest.
type (
	// AttestPredicate is what an attestation says of a change.
	AttestPredicate = attest.Predicate
	// VerifiedAttestation is what a valid attestation says, and who signed it.
	VerifiedAttestation = attest.Verified
	// AttestSigningKey is the state directory's signing key.
	AttestSigningKey = attest.Key
)

// Errors of export and of the offline check the surfaces act on.
var (
	ErrNoChange   = attest.ErrNoChange
	ErrKeyExposed = attest.ErrKeyExposed
	ErrNoKey      = attest.ErrNoKey
)

// ExportRequest says which task to export and where to write it.
type ExportRequest struct {
	TaskID   string
	DiffPath string // the canonical diff, replaced atomically
	// AttestationPath is where the signed attestation goes; "": none.
	AttestationPath string
}

// Export is what ExportTask wrote.
type Export struct {
	Base, Head string
	Digest     string // git.Digest of the diff: "sha256:<hex>"
	Bytes      int
	// Predicate is what the attestation says (or would say) of the head:
	// its verdict and level, whether it was written or not.
	Predicate *attest.Predicate
	KeyID     string // the signing key's id; "" without an attestation
}

// ExportTask writes a task's change (base..head of its branch) as a
// canonical diff (git.CanonicalDiff) and, when asked, a signed attestation
// of it (engine/attest) with the newest recorded check of that head. Any
// task with a change is exported; the predicate says its verdict as it is.
// Both files are computed first and each replaced atomically.
func (e *Engine) ExportTask(ctx context.Context, req ExportRequest) (*Export, error) {
	if req.AttestationPath != "" && samePath(req.DiffPath, req.AttestationPath) {
		return nil, fmt.Errorf("%w: the diff and the attestation would both be %s", attest.ErrInput, req.DiffPath)
	}
	rec, diff, err := e.exportRecord(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	out := &Export{Base: rec.Task.Base, Head: rec.Head, Digest: git.Digest(diff), Bytes: len(diff)}
	if out.Predicate, err = attest.NewPredicate(*rec); err != nil {
		return nil, err
	}
	var envelope []byte
	if req.AttestationPath != "" {
		// Only the attestation carries them: asking four toolchains for
		// their versions is no part of writing a diff.
		if len(out.Predicate.Toolchains) == 0 {
			out.Predicate.Toolchains, out.Predicate.ToolchainsSource = attest.HostToolchains(ctx), attest.ToolchainsFromExport
		}
		if envelope, out.KeyID, err = e.sign(ctx, out.Digest, out.Predicate); err != nil {
			return nil, err
		}
	}
	if err := attest.WriteFile(req.DiffPath, diff); err != nil {
		return nil, err
	}
	if envelope != nil {
		if err := attest.WriteFile(req.AttestationPath, envelope); err != nil {
			return nil, err
		}
	}
	// The journal says what left: the change's digest, at which head,
	// with which verdict, signed by which key (none: the diff alone).
	claim := exportClaim{Digest: out.Digest, Base: out.Base, Head: out.Head, Verdict: out.Predicate.Verdict, KeyID: out.KeyID}
	if _, err := e.RecordClaim(ctx, engine.ClaimExport, req.TaskID, claim); err != nil {
		return out, fmt.Errorf("the export is written, but not recorded in the journal: %w", err)
	}
	return out, nil
}

// exportClaim is a journal entry's payload for an export.
type exportClaim struct {
	Digest  string `json:"digest"`
	Base    string `json:"base"`
	Head    string `json:"head"`
	Verdict string `json:"verdict"`
	KeyID   string `json:"key_id,omitempty"`
}

// exportRecord reads what an export needs of task id: its record, head
// and canonical diff, refusing a task with no change (attest.ErrNoChange).
func (e *Engine) exportRecord(ctx context.Context, id string) (*attest.Record, []byte, error) {
	l, err := e.reader(ctx)
	if err != nil {
		return nil, nil, err
	}
	if l == nil {
		return nil, nil, fmt.Errorf("task %q: %w", id, engine.ErrNotFound)
	}
	rec := &attest.Record{}
	t, err := l.Task(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	rec.Task = *t
	repo, err := git.Open(ctx, t.Repo)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s's repository %s: %w", id, t.Repo, err)
	}
	if rec.Head, err = repo.Resolve(ctx, "refs/heads/"+t.Branch); err != nil {
		return nil, nil, fmt.Errorf("%w: task %s has no branch %s (it never ran, or it was rejected)", attest.ErrNoChange, id, t.Branch)
	}
	diff, err := repo.CanonicalDiff(ctx, t.Base, rec.Head)
	if err != nil {
		return nil, nil, err
	}
	if len(diff) == 0 {
		return nil, nil, fmt.Errorf("%w: task %s's branch %s has its base's tree (status %s)", attest.ErrNoChange, id, t.Branch, t.Status)
	}
	if rec.Attempts, err = l.Attempts(ctx, id); err != nil {
		return nil, nil, err
	}
	if rec.Events, err = l.Events(ctx, id, 0, 0); err != nil {
		return nil, nil, err
	}
	if rec.Runs, err = l.TaskVerifications(ctx, id, 0); err != nil {
		return nil, nil, err
	}
	return rec, diff, nil
}

// sign makes the signed attestation of p about the diff digest, with the
// state directory's key (made on first use).
func (e *Engine) sign(ctx context.Context, digest string, p *attest.Predicate) ([]byte, string, error) {
	st, err := attest.Statement(digest, p)
	if err != nil {
		return nil, "", err
	}
	key, err := e.AttestKey(ctx)
	if err != nil {
		return nil, "", err
	}
	env, err := attest.Sign(ctx, key, st)
	return env, key.ID, err
}

// AttestKey is the state directory's signing key, made (0600) on first
// use; a key file others can read is refused (attest.ErrKeyExposed).
func (e *Engine) AttestKey(ctx context.Context) (*attest.Key, error) {
	dir, err := e.stateDir()
	if err != nil {
		return nil, err
	}
	return attest.LoadKey(dir, true)
}

// VerifyRequest names the files an offline check reads.
type VerifyRequest struct {
	AttestationPath string
	DiffPath        string // "": the diff is not checked
	// KeyPath is a public key file (PEM); "": the state directory's key,
	// which must exist already.
	KeyPath string
}

// VerifyAttestation checks an attestation offline (attest.Verify): no
// repository, no ledger, nothing run.
func (e *Engine) VerifyAttestation(ctx context.Context, req VerifyRequest) (*attest.Verified, error) {
	pub, err := e.verifyKey(req.KeyPath)
	if err != nil {
		return nil, err
	}
	env, err := attest.ReadInput(req.AttestationPath, attest.MaxEnvelope)
	if err != nil {
		return nil, err
	}
	var diff []byte
	if req.DiffPath != "" {
		if diff, err = attest.ReadInput(req.DiffPath, attest.MaxDiff); err != nil {
			return nil, err
		}
		if diff == nil {
			diff = []byte{} // an empty file is a diff to check, not none
		}
	}
	return attest.Verify(ctx, env, diff, pub)
}

// verifyKey is the public key at path, or the state directory's.
func (e *Engine) verifyKey(path string) (ed25519.PublicKey, error) {
	if path != "" {
		return attest.ReadPublicKey(path)
	}
	dir, err := e.stateDir()
	if err != nil {
		return nil, err
	}
	k, err := attest.LoadKey(dir, false)
	if err != nil {
		return nil, err
	}
	return k.Public(), nil
}

// stateDir is the state directory that holds the ledger file.
func (e *Engine) stateDir() (string, error) {
	p, err := e.ledgerPath()
	if err != nil {
		return "", err
	}
	return filepath.Dir(p), nil
}

// samePath reports whether two output paths name the same file.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}
