package attest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// change is a real repository's change: a base commit, a head commit
// that fixes calc.go and adds a test and a binary file, and the canonical
// diff between them.
type change struct {
	base, head string
	diff       []byte
}

func realChange(t *testing.T) change {
	t.Helper()
	r := testrepo.FromFiles(t, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n"})
	base := strings.TrimSpace(r.Git("rev-parse", "HEAD"))
	r.Write(map[string]string{
		"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(Add(2, 2))\n\t}\n}\n",
		"blob.bin":     "\x00\x01\x02binary\xff",
	})
	head := r.Commit("fix Add")
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	diff, err := repo.CanonicalDiff(context.Background(), base, head)
	if err != nil {
		t.Fatal(err)
	}
	return change{base: base, head: head, diff: diff}
}

// record is a verified, accepted task of ch as the ledger holds it: a
// gate run of its head with a credited test, a pass-to-pass count and a
// level, an older failed run of another head, and the accept event.
func record(t *testing.T, ch change) Record {
	t.Helper()
	at := time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC)
	rep := map[string]any{
		"verdict": "verified", "base": ch.base, "head": ch.head, "runner": "host",
		"reasons":      []verify.Reason{{Code: "credited", Message: "1 test credited"}},
		"tests":        []verify.TestReport{{Name: "TestAdd", Package: "example.com/calc", Language: "go", Credited: true}, {Name: "TestOther", Package: "example.com/calc", Language: "go"}},
		"tamper":       []verify.Finding{{Code: "test_infra_changed", Path: "conftest.py", Message: "allowed"}},
		"pass_to_pass": verify.PassToPass{Checked: 7, PreExisting: []string{"go:example.com/calc:TestOld"}},
		"level":        "V2", "level_required": "V2", "oracle": []string{"go:example.com/calc:TestAdd"},
		"toolchains": map[string]string{"go": "go version go1.26.8 linux/amd64"},
	}
	raw, _ := json.Marshal(rep)
	accepted, _ := json.Marshal(map[string]any{"by": "ada", "force": false, "method": "fast-forward"})
	return Record{
		Task:     engine.Task{ID: "t1", Base: ch.base, Status: engine.TaskAccepted},
		Attempts: []engine.Attempt{{Number: 1}, {Number: 2}},
		Events:   []engine.Event{{Kind: engine.EventAccepted, Data: accepted, At: at.Add(time.Minute)}},
		Runs: []engine.VerificationRun{
			{ID: 1, Head: ch.base, Verdict: "failed", Report: []byte(`{"verdict":"failed"}`), At: at.Add(-time.Hour)},
			{ID: 2, Head: ch.head, Verdict: "verified", Report: raw, At: at},
		},
		Head: ch.head,
	}
}

func newKey(t *testing.T) *Key {
	t.Helper()
	k, err := LoadKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signed is the envelope of a statement about ch signed by k.
func signed(t *testing.T, k *Key, ch change, p *Predicate) []byte {
	t.Helper()
	st, err := Statement(git.Digest(ch.diff), p)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Sign(context.Background(), k, st)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestRoundTrip(t *testing.T) {
	ch := realChange(t)
	p, err := NewPredicate(record(t, ch))
	if err != nil {
		t.Fatal(err)
	}
	k := newKey(t)
	v, err := Verify(context.Background(), signed(t, k, ch, p), ch.diff, k.Public())
	if err != nil {
		t.Fatal(err)
	}
	got := v.Predicate
	if v.KeyID != k.ID || !strings.HasPrefix(k.ID, "SHA256:") || !v.DiffCheck || v.DiffDigest != git.Digest(ch.diff) {
		t.Errorf("key %s (want %s), diff checked %v, digest %s", v.KeyID, k.ID, v.DiffCheck, v.DiffDigest)
	}
	if got.Verdict != "verified" || got.Level != "V2" || got.Head != ch.head || got.Base != ch.base || got.Task.Attempts != 2 || got.Runner != "host" {
		t.Errorf("predicate %+v", got)
	}
	if strings.Join(got.Credited, ",") != "go:example.com/calc:TestAdd" || strings.Join(got.Oracle, ",") != "go:example.com/calc:TestAdd" {
		t.Errorf("credited %v, oracle %v", got.Credited, got.Oracle)
	}
	if got.PassToPass == nil || got.PassToPass.Checked != 7 || got.PassToPass.PreExisting != 1 || len(got.Findings) != 1 || got.Findings[0].Path != "conftest.py" {
		t.Errorf("pass to pass %+v, findings %+v", got.PassToPass, got.Findings)
	}
	if got.Approval == nil || got.Approval.By != "ada" || got.Approval.Method != "fast-forward" || got.CheckedAt == nil || got.Bcode.Go == "" {
		t.Errorf("approval %+v, checked at %v, bcode %+v", got.Approval, got.CheckedAt, got.Bcode)
	}
	if got.Toolchains["go"] != "go version go1.26.8 linux/amd64" || got.ToolchainsSource != ToolchainsFromCheck {
		t.Errorf("toolchains %v from %q", got.Toolchains, got.ToolchainsSource)
	}
	// Without a diff the rest is still checked, and says the diff was not.
	if v, err := Verify(context.Background(), signed(t, k, ch, p), nil, k.Public()); err != nil || v.DiffCheck {
		t.Errorf("no diff: %v, checked %v", err, v != nil && v.DiffCheck)
	}
}

// TestUncheckedHead: a head no check judged is attested as unchecked,
// with empty lists, not refused.
func TestUncheckedHead(t *testing.T) {
	ch := realChange(t)
	rec := record(t, ch)
	rec.Runs, rec.Events = rec.Runs[:1], nil
	p, err := NewPredicate(rec)
	if err != nil {
		t.Fatal(err)
	}
	k := newKey(t)
	v, err := Verify(context.Background(), signed(t, k, ch, p), ch.diff, k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if v.Predicate.Verdict != Unchecked || v.Predicate.CheckedAt != nil || v.Predicate.Approval != nil || v.Predicate.Credited == nil {
		t.Errorf("predicate %+v", v.Predicate)
	}
}

// signPayload signs any payload with k as Sign would: for statements
// Statement would never make, to reach the checks behind the signature.
func signPayload(t *testing.T, k *Key, payloadType string, payload []byte) []byte {
	t.Helper()
	s, err := dsse.NewEnvelopeSigner(signerVerifier{priv: k.priv, pub: k.Public()})
	if err != nil {
		t.Fatal(err)
	}
	env, err := s.SignPayload(context.Background(), payloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(env)
	return out
}

// statementJSON is the statement about ch as a JSON object to edit.
func statementJSON(t *testing.T, ch change, p *Predicate) map[string]any {
	t.Helper()
	st, err := Statement(git.Digest(ch.diff), p)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := protojson.Marshal(st)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func editEnvelope(t *testing.T, env []byte, edit func(*dsse.Envelope)) []byte {
	t.Helper()
	var e dsse.Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	edit(&e)
	out, _ := json.Marshal(e)
	return out
}

// TestVerifyRefuses: each way an attestation can be wrong is refused with
// its own error, and the message says what was wrong.
func TestVerifyRefuses(t *testing.T) {
	ctx := context.Background()
	ch := realChange(t)
	p, err := NewPredicate(record(t, ch))
	if err != nil {
		t.Fatal(err)
	}
	k, other := newKey(t), newKey(t)
	good := signed(t, k, ch, p)
	changedByte := append([]byte(nil), ch.diff...)
	changedByte[len(changedByte)/2] ^= 1
	resign := func(edit func(m map[string]any)) []byte {
		m := statementJSON(t, ch, p)
		edit(m)
		raw, _ := json.Marshal(m)
		return signPayload(t, k, PayloadType, raw)
	}
	pred := func(m map[string]any) map[string]any { return m["predicate"].(map[string]any) }
	cases := []struct {
		name     string
		envelope []byte
		diff     []byte
		key      *Key
		want     error
		says     string
	}{
		{"one changed byte in the diff", good, changedByte, k, ErrDiffMismatch, "the attestation says sha256:"},
		{"an empty diff", good, []byte{}, k, ErrDiffMismatch, "does not match"},
		{"a changed predicate field", editEnvelope(t, good, func(e *dsse.Envelope) {
			payload, _ := base64.StdEncoding.DecodeString(e.Payload)
			var m map[string]any
			json.Unmarshal(payload, &m)
			m["predicate"].(map[string]any)["verdict"] = "verified"
			m["predicate"].(map[string]any)["task"].(map[string]any)["attempts"] = 1
			payload, _ = json.Marshal(m)
			e.Payload = base64.StdEncoding.EncodeToString(payload)
		}), ch.diff, k, ErrSignature, "changed after signing"},
		{"another key", good, ch.diff, other, ErrSignature, other.ID},
		{"a truncated envelope", good[:len(good)/2], ch.diff, k, ErrEnvelope, "truncated"},
		{"not JSON", []byte("not an envelope"), ch.diff, k, ErrEnvelope, "not a DSSE envelope"},
		{"a wrong payload type", editEnvelope(t, good, func(e *dsse.Envelope) { e.PayloadType = "application/json" }), ch.diff, k, ErrPayloadType, `"application/json"`},
		{"an unsigned envelope", editEnvelope(t, good, func(e *dsse.Envelope) { e.Signatures = nil }), ch.diff, k, ErrUnsigned, "not signed"},
		{"an empty signature", editEnvelope(t, good, func(e *dsse.Envelope) { e.Signatures[0].Sig = "" }), ch.diff, k, ErrSignature, "does not verify"},
		{"a payload that is not base64", editEnvelope(t, good, func(e *dsse.Envelope) { e.Payload = "%%%" }), ch.diff, k, ErrEnvelope, "base64"},
		{"the legacy statement type", resign(func(m map[string]any) { m["_type"] = "https://in-toto.io/Statement/v0.1" }), ch.diff, k, ErrStatement, "v0.1"},
		{"another predicate type", resign(func(m map[string]any) { m["predicateType"] = "https://slsa.dev/provenance/v1" }), ch.diff, k, ErrPredicateType, "slsa.dev"},
		{"no task id", resign(func(m map[string]any) { pred(m)["task"].(map[string]any)["id"] = "" }), ch.diff, k, ErrPredicate, "no task id"},
		{"an unknown verdict", resign(func(m map[string]any) { pred(m)["verdict"] = "great" }), ch.diff, k, ErrPredicate, `"great"`},
		{"an unknown field", resign(func(m map[string]any) { pred(m)["trust_me"] = true }), ch.diff, k, ErrPredicate, "trust_me"},
		{"no credited list", resign(func(m map[string]any) { delete(pred(m), "credited") }), ch.diff, k, ErrPredicate, "credited"},
		{"a head that is not the commit subject", resign(func(m map[string]any) { pred(m)["head"] = ch.base }), ch.diff, k, ErrStatement, "not the predicate's head"},
		{"no diff subject", resign(func(m map[string]any) { m["subject"] = m["subject"].([]any)[1:] }), ch.diff, k, ErrStatement, "two subjects"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Verify(ctx, c.envelope, c.diff, c.key.Public())
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("%q does not say %q", err, c.says)
			}
		})
	}
	// The statement library's own check: a legacy type passes its
	// Validate, which is why Verify asks for v1 itself.
	if (&intoto.Statement{Type: "https://in-toto.io/Statement/v0.1"}).Validate() == intoto.ErrInvalidStatementType {
		t.Error("the library refuses v0.1 now: Verify's own check is redundant")
	}
}

func TestVerifyRefusesABadKey(t *testing.T) {
	if _, err := Verify(context.Background(), []byte("{}"), nil, nil); !errors.Is(err, ErrKey) {
		t.Errorf("no key: %v", err)
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadKey(dir, false); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no key yet: %v", err)
	}
	k, err := LoadKey(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info.Mode(), err)
	}
	again, err := LoadKey(dir, true)
	if err != nil || again.ID != k.ID {
		t.Fatalf("second load: %v, id %s want %s", err, again.ID, k.ID)
	}
	pub, err := ParsePublicKey(k.PublicPEM())
	if err != nil || KeyID(pub) != k.ID {
		t.Fatalf("public PEM round trip: %v", err)
	}
	if _, err := ParsePublicKey([]byte("ssh-ed25519 AAAA")); !errors.Is(err, ErrKey) {
		t.Errorf("not PEM: %v", err)
	}
	if _, err := ParsePublicKey(pemBlock(t, "PUBLIC KEY", []byte("junk"))); !errors.Is(err, ErrKey) {
		t.Errorf("junk DER: %v", err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		os.Chmod(filepath.Join(dir, KeyFile), mode)
		if _, err := LoadKey(dir, true); !errors.Is(err, ErrKeyExposed) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	os.Chmod(filepath.Join(dir, KeyFile), 0o600)
	if k2, err := LoadKey(dir, true); err != nil || k2.ID != k.ID {
		t.Errorf("after chmod 600: %v (a refused key is never replaced)", err)
	}
	// A link in the key's place is refused, even to a 0600 key: the mode
	// checked is the mode of the file read.
	linked := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, KeyFile), filepath.Join(linked, KeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(linked, true); !errors.Is(err, ErrKey) {
		t.Errorf("a link in the key's place: %v, want ErrKey", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, KeyFile), pemBlock(t, "PRIVATE KEY", []byte("junk")), 0o600)
	if _, err := LoadKey(other, true); !errors.Is(err, ErrKey) {
		t.Errorf("junk key: %v", err)
	}
}

func pemBlock(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return []byte("-----BEGIN " + typ + "-----\n" + base64.StdEncoding.EncodeToString(der) + "\n-----END " + typ + "-----\n")
}

// TestWriteFile: an existing file is replaced whole, with no temporary
// file left; a directory in the way is refused and left alone.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.diff")
	os.WriteFile(p, []byte(strings.Repeat("old ", 1000)), 0o644)
	if err := WriteFile(p, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Errorf("content %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	if err := WriteFile(sub, []byte("x")); !errors.Is(err, ErrInput) {
		t.Errorf("directory: %v", err)
	}
	if _, err := ReadInput(sub, 10); !errors.Is(err, ErrInput) {
		t.Errorf("read a directory: %v", err)
	}
	if _, err := ReadInput(p, 2); !errors.Is(err, ErrInput) {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadInput(filepath.Join(dir, "missing"), 10); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing: %v", err)
	}
}

// TestHostToolchains: go, which runs these tests, is read; a toolchain
// that is not installed is left out rather than guessed.
func TestHostToolchains(t *testing.T) {
	got := HostToolchains(context.Background())
	if !strings.HasPrefix(got["go"], "go version go") {
		t.Errorf("go: %q", got["go"])
	}
	if v := queryVersion(context.Background(), []string{"bcode-no-such-toolchain", "--version"}); v != "" {
		t.Errorf("a missing toolchain answered %q", v)
	}
}
