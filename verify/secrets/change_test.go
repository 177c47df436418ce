package secrets

import (
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// changeOf builds base..head the way the gate does: no rename detection,
// both sides' contents, and the head lines each hunk adds (from -U0 hunk
// headers).
func (r *testRepo) changeOf(base, head string) *verify.Change {
	r.t.Helper()
	c := &verify.Change{Base: base, Head: head}
	for _, line := range strings.Split(r.Git("diff", "--no-renames", "--name-status", base, head), "\n") {
		status, p, _ := strings.Cut(line, "\t")
		fc := verify.FileChange{Path: p}
		switch status {
		case "A":
			fc.Status = verify.Added
		case "M":
			fc.Status = verify.Modified
		case "D":
			fc.Status = verify.Deleted
		default:
			r.t.Fatalf("unexpected diff line %q", line)
		}
		if fc.Status != verify.Added {
			fc.Base = []byte(r.Git("show", base+":"+p))
		}
		if fc.Status != verify.Deleted {
			fc.Head = []byte(r.Git("show", head+":"+p))
			for _, h := range strings.Split(r.Git("diff", "-U0", "--no-color", base, head, "--", p), "\n") {
				if !strings.HasPrefix(h, "@@ ") {
					continue
				}
				_, count, start, ok := hunkHeader(h)
				if ok && count > 0 {
					fc.Changed = append(fc.Changed, verify.LineRange{Start: start, End: start + count - 1})
				}
			}
		}
		c.Files = append(c.Files, fc)
	}
	return c
}

func TestScanChangeOnlyAddedLines(t *testing.T) {
	r := newTestRepo(t)
	// The base already holds one secret; the change must not be blamed.
	r.WriteFile("config/settings.py", "DEBUG = False\nAWS_KEY = \""+fakeAWSKey()+"\"\nNAME = \"app\"\n")
	r.WriteFile("old/creds.txt", "token "+fakeGitHubToken()+"\n")
	base := r.Commit("base")

	r.WriteFile("config/settings.py", "DEBUG = False\nAWS_KEY = \""+fakeAWSKey()+"\"\nNAME = \"app2\"\nGH = \""+fakeGitHubToken()+"\"\n")
	r.Git("rm", "-q", "old/creds.txt") // deleting a secret is not adding one
	r.WriteFile("deploy/key.pem", "# added for deploys\n"+fakePrivateKey())
	r.WriteFile("deploy/client.p12", "\x00\x01binary keystore")
	head := r.Commit("head")

	s := newTestScanner(t)
	got := s.ScanChange(r.changeOf(base, head))
	type want struct {
		path string
		line int
		rule string
	}
	wants := []want{
		{"config/settings.py", 4, "github-pat"},
		{"deploy/client.p12", 0, "pkcs12-file"},
		{"deploy/key.pem", 2, "private-key"},
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d findings, want %d:\n%+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		f := got[i]
		if f.Code != verify.FindingSecret || f.Path != w.path || f.Line != w.line || !strings.Contains(f.Message, w.rule) {
			t.Errorf("finding %d = %+v, want %+v", i, f, w)
		}
		for _, secret := range []string{fakeAWSKey(), fakeGitHubToken(), "MIIEowIBAAKCAQEA"} {
			if strings.Contains(f.Message, secret) {
				t.Errorf("message leaks the secret: %q", f.Message)
			}
		}
	}
	if !strings.Contains(got[0].Message, "ghp_…(40 chars)") {
		t.Errorf("message does not show the redacted form: %q", got[0].Message)
	}
}

func TestScanChangeRangesOutOfBounds(t *testing.T) {
	s := newTestScanner(t)
	change := &verify.Change{Files: []verify.FileChange{{
		Path: "a.txt", Status: verify.Modified, Base: []byte("x\n"),
		Head:    []byte("x\nkey " + fakeAWSKey() + "\n"),
		Changed: []verify.LineRange{{Start: 0, End: 99}, {Start: 7, End: 3}},
	}}}
	got := s.ScanChange(change)
	if len(got) != 1 || got[0].Line != 2 {
		t.Fatalf("got %+v", got)
	}
	if s.ScanChange(nil) != nil {
		t.Fatal("ScanChange(nil) reported findings")
	}
}
