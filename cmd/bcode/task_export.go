package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/bcode-dev/bcode/engine/app"
)

func init() {
	taskGroup.subs["export"] = taskExport
}

// taskExport is bcode task export TASK --diff FILE [--attestation FILE]:
// the task's change as a canonical diff, its digest printed, and a signed
// attestation of it (docs/attestation.md).
func taskExport(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "export TASK --diff FILE [--attestation FILE]", stdout, stderr)
	c.fs.about = `Write the task's change (its base to the head of its branch) as a canonical diff, which git apply
takes and whose bytes depend on the two commits alone, and print its digest (sha256:<hex>).
With --attestation, also write an in-toto statement about the diff and the head commit, in a DSSE
envelope signed with this state directory's ed25519 key (made on first use; bcode attest key prints it).
Any task with a change is exported: the attestation records the verdict as it is (verified, failed,
unchecked...). Existing files are replaced atomically. Check one with bcode attest verify.`
	diffPath := c.fs.String("diff", "", "write the canonical diff to `FILE` (required)")
	attPath := c.fs.String("attestation", "", "write the signed attestation to `FILE`")
	id, code, ok := c.openOne(args)
	if !ok {
		return code
	}
	if *diffPath == "" {
		return c.usageErr("give --diff FILE")
	}
	if *diffPath == "-" || *attPath == "-" {
		// What bcode prints goes through sandbox/shown, which would
		// change a diff's bytes (a binary patch, a control character).
		return c.usageErr("give a FILE, not -: the diff and the attestation are written byte for byte, and bcode's own output is sanitized for the terminal")
	}
	res, err := eng.ExportTask(ctx, app.ExportRequest{TaskID: id, DiffPath: *diffPath, AttestationPath: *attPath})
	if err != nil {
		return c.fail("%s", explainAttest(id, err))
	}
	fmt.Fprintln(stdout, res.Digest)
	fmt.Fprintf(stderr, "wrote %s: %d bytes, %.12s..%.12s\n", *diffPath, res.Bytes, res.Base, res.Head)
	if res.KeyID != "" {
		fmt.Fprintf(stderr, "wrote %s: verdict %s, signed by %s\n", *attPath, describeVerdict(res.Predicate), res.KeyID)
	}
	if res.Predicate.Verdict != "verified" {
		fmt.Fprintf(stderr, "note: task %s is not verified at this head (verdict %s); the attestation says so\n", id, res.Predicate.Verdict)
	}
	return 0
}

// describeVerdict is a predicate's verdict with its level when it has one.
func describeVerdict(p *app.AttestPredicate) string {
	if p.Level != "" {
		return p.Verdict + " at level " + p.Level
	}
	return p.Verdict
}

// explainAttest says what to do about an export's or a check's error.
func explainAttest(id string, err error) string {
	switch {
	case errors.Is(err, app.ErrNoChange):
		return err.Error() + " (bcode task status " + id + " shows it)"
	case errors.Is(err, app.ErrKeyExposed):
		return err.Error() + ": a signing key others can read is not used"
	}
	return explain(id, err)
}
