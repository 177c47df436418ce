package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

func init() {
	register(command{
		name:    "attest",
		summary: "the signing key of attestations, and their offline check",
		run:     attestGroup.run,
	})
}

// attestGroup is bcode attest: attestations are written by bcode task
// export --attestation.
var attestGroup = commandGroup{
	name: "bcode attest",
	about: `  key [--state DIR]                                   print the public key attestations are signed with, and its id
  verify --attestation FILE [--diff FILE] [--key PUB]   check an attestation offline: signature, diff digest, predicate

bcode task export TASK --diff FILE --attestation FILE writes one. See docs/attestation.md.`,
	subs: map[string]subcommand{"key": attestKey, "verify": attestVerify},
}

// stateOnly registers --state alone: the key lives in the state
// directory, whatever ledger the tasks are in.
func stateOnly(fs *cliFlags, st *stateFlags) {
	fs.StringVar(&st.state, "state", "", "the state directory `DIR` holding the signing key (default $BCODE_STATE, else $XDG_STATE_HOME/bcode)")
}

func attestKey(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode attest key [--state DIR]", stdout, stderr)
	fs.about = `Print the public key (PEM) that bcode task export --attestation signs with, after a line with its
key id ("# keyid SHA256:..."), the envelope's keyid. The key is made on first use, mode 0600.
Give the PEM to whoever checks attestations: bcode attest verify --key FILE.`
	var st stateFlags
	stateOnly(fs, &st)
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	if err := st.useLocal(eng); err != nil {
		errorf(stderr, fs.Name(), "%v", err)
		return 1
	}
	k, err := eng.AttestKey(ctx)
	if err != nil {
		errorf(stderr, fs.Name(), "%v", err)
		return 1
	}
	fmt.Fprintf(stdout, "# keyid %s\n%s", k.ID, k.PublicPEM())
	return 0
}

func attestVerify(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode attest verify --attestation FILE [--diff FILE] [--key PUB] [--json]", stdout, stderr)
	fs.about = `Check an attestation offline, without a repository and without running anything: its DSSE
signature (with the public key PUB, else this state directory's key), that it is an in-toto
Statement v1 with bcode's predicate, well formed, and with --diff that the file's SHA-256 is the
attested digest. Exit 0: valid; 1: not valid (the reason on stderr); 2: usage.`
	var st stateFlags
	stateOnly(fs, &st)
	req := app.VerifyRequest{}
	fs.StringVar(&req.AttestationPath, "attestation", "", "the attestation `FILE` (required)")
	fs.StringVar(&req.DiffPath, "diff", "", "the diff `FILE` to check against the attested digest")
	fs.StringVar(&req.KeyPath, "key", "", "the public key `PUB` (PEM, as bcode attest key prints it)")
	asJSON := fs.Bool("json", false, "print what the attestation says as JSON")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	if req.AttestationPath == "" {
		return fs.usageErr("give --attestation FILE")
	}
	if req.KeyPath == "" {
		if err := st.useLocal(eng); err != nil {
			errorf(stderr, fs.Name(), "%v", err)
			return 1
		}
	}
	v, err := eng.VerifyAttestation(ctx, req)
	if err != nil {
		errorf(stderr, fs.Name(), "invalid: %v", err)
		if errors.Is(err, app.ErrNoKey) {
			fmt.Fprintln(stderr, "pass the signer's public key with --key PUB")
		}
		return 1
	}
	if *asJSON {
		return printJSON(stdout, v)
	}
	printVerified(stdout, v)
	return 0
}

// printVerified says what a valid attestation attests.
func printVerified(w io.Writer, v *app.VerifiedAttestation) {
	p := v.Predicate
	diff := "the diff was not checked (pass --diff FILE)"
	if v.DiffCheck {
		diff = "the diff matches"
	}
	fmt.Fprintf(w, "valid: signed by %s; %s\n", v.KeyID, diff)
	fmt.Fprintf(w, "task %s (%s, %d attempt(s)): %.12s..%.12s, verdict %s\n",
		shown.Line(p.Task.ID), shown.Line(p.Task.Status), p.Task.Attempts, p.Base, p.Head, shown.Line(describeVerdict(&p)))
	fmt.Fprintf(w, "digest %s\n", v.DiffDigest)
	if a := p.Approval; a != nil {
		fmt.Fprintf(w, "accepted by %s at %s\n", shown.Line(a.By), a.At.Format("2006-01-02 15:04:05Z07:00"))
	}
}
