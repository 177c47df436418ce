package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	glconfig "github.com/zricethezav/gitleaks/v8/config"
)

func ruleIDs(fs []Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.RuleID)
	}
	return ids
}

func findRule(fs []Finding, rule string) (Finding, bool) {
	for _, f := range fs {
		if f.RuleID == rule {
			return f, true
		}
	}
	return Finding{}, false
}

func TestScanTextDetects(t *testing.T) {
	s := newTestScanner(t)
	tests := []struct {
		name, path, text string
		rule, secret     string
		line             int
	}{
		{"aws key", "config/prod.env", "# prod\nAWS_ACCESS_KEY_ID=" + fakeAWSKey() + "\n", "aws-access-token", fakeAWSKey(), 2},
		{"github token", "scripts/release.sh", "#!/bin/sh\n\nexport GH_TOKEN=" + fakeGitHubToken() + "\n", "github-pat", fakeGitHubToken(), 3},
		{"private key block", "deploy/id_rsa", fakePrivateKey(), "private-key", strings.TrimSuffix(fakePrivateKey(), "\n"), 1},
		{"no path", "", "token: " + fakeGitHubToken(), "github-pat", fakeGitHubToken(), 1},
		// gitleaks' default allowlist exempts any path containing
		// "gitleaks.toml"; bcode drops that exemption.
		{"path gitleaks exempts by name", "x/gitleaks.toml.go", "var k = \"" + fakeAWSKey() + "\"\n", "aws-access-token", fakeAWSKey(), 1},
		// A `gitleaks:allow` comment is the scanned text's own say-so.
		{"gitleaks:allow is ignored", "a.go", "\n\nkey := \"" + fakeAWSKey() + "\" // gitleaks:allow\n", "aws-access-token", fakeAWSKey(), 3},
		{"split by zero-width space", "a.txt", "k=" + fakeAWSKey()[:8] + "\u200b" + fakeAWSKey()[8:] + "\n", "aws-access-token", fakeAWSKey(), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.ScanText(tt.path, []byte(tt.text))
			f, ok := findRule(got, tt.rule)
			if !ok {
				t.Fatalf("no %s finding; got %v", tt.rule, ruleIDs(got))
			}
			if f.Secret != tt.secret {
				t.Errorf("Secret = %q, want %q", f.Secret, tt.secret)
			}
			if f.Line != tt.line || f.Path != tt.path {
				t.Errorf("at %s:%d, want %s:%d", f.Path, f.Line, tt.path, tt.line)
			}
			if f.Description == "" {
				t.Error("no description")
			}
			if strings.Contains(f.Redacted, tt.secret) || f.Redacted == "" {
				t.Errorf("Redacted %q shows the secret", f.Redacted)
			}
		})
	}
}

func TestScanTextCleanText(t *testing.T) {
	s := newTestScanner(t)
	clean := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tkey := os.Getenv(\"API_KEY\")\n\tfmt.Println(len(key))\n}\n"
	if got := s.ScanText("main.go", []byte(clean)); len(got) != 0 {
		t.Fatalf("false positives: %+v", got)
	}
}

func TestDefaultExemptionDropped(t *testing.T) {
	// The entry bcode drops must exist upstream, or the drop is a no-op and
	// the test above passes for the wrong reason.
	for _, p := range exemptPathsDropped {
		if !strings.Contains(glconfig.DefaultConfig, "'''"+p+"'''") {
			t.Errorf("gitleaks' default config no longer has path exemption %q: revisit exemptPathsDropped", p)
		}
	}
}

func TestExtraValues(t *testing.T) {
	canary := fakeCanary()
	s := newTestScanner(t, canary, "short", "")
	if len(s.extras) == 0 || slices.ContainsFunc(s.extras, func(e extraValue) bool { return len(e.value) < MinExtraLen }) {
		t.Fatalf("extras = %v", s.extras)
	}
	text := "line one\nthe canary is " + canary + " and short is short\n"
	got := s.ScanText("notes.md", []byte(text))
	if len(got) != 1 || got[0].RuleID != KnownSecretRule || got[0].Line != 2 || got[0].Secret != canary {
		t.Fatalf("got %+v", got)
	}
	out, n := s.Redact(text)
	if strings.Contains(out, canary) || n != 1 || !strings.Contains(out, "[REDACTED:"+KnownSecretRule+"]") {
		t.Fatalf("Redact = %q, %d", out, n)
	}
	if !strings.Contains(out, "short is short") {
		t.Errorf("a value shorter than %d bytes was redacted: %q", MinExtraLen, out)
	}

	// The same canary base64- or hex-encoded on its way out.
	for _, enc := range []string{
		base64.StdEncoding.EncodeToString([]byte(canary)),
		base64.RawURLEncoding.EncodeToString([]byte(canary)),
		hex.EncodeToString([]byte(canary)),
	} {
		out, n := s.Redact("payload=" + enc + ";")
		if strings.Contains(out, strings.TrimRight(enc, "=")) || n != 1 {
			t.Errorf("encoded canary %q survived: %q (%d)", enc, out, n)
		}
	}
}

func TestRedact(t *testing.T) {
	canary := fakeCanary()
	s := newTestScanner(t, canary)
	text := strings.Join([]string{
		"Here is the config you asked for:",
		"aws_access_key_id = " + fakeAWSKey(),
		"GITHUB_TOKEN=" + fakeGitHubToken() + " # same token again: " + fakeGitHubToken(),
		fakePrivateKey() + "canary: " + canary,
		"That's all.",
	}, "\n")
	out, n := s.Redact(text)
	for _, secret := range []string{fakeAWSKey(), fakeGitHubToken(), "PRIVATE KEY", "MIIEowIBAAKCAQEA", canary} {
		if strings.Contains(out, secret) {
			t.Errorf("%q survived redaction:\n%s", secret, out)
		}
	}
	for _, label := range []string{"[REDACTED:aws-access-token]", "[REDACTED:github-pat]", "[REDACTED:private-key]", "[REDACTED:known-secret]"} {
		if !strings.Contains(out, label) {
			t.Errorf("missing %s in:\n%s", label, out)
		}
	}
	if strings.Count(out, "[REDACTED:github-pat]") != 2 {
		t.Errorf("each occurrence of a secret must be replaced:\n%s", out)
	}
	if n != 5 {
		t.Errorf("count = %d, want 5 (aws, 2×github, key, canary)", n)
	}
	if !strings.HasPrefix(out, "Here is the config you asked for:\n") || !strings.HasSuffix(out, "That's all.") {
		t.Errorf("text around the secrets changed:\n%s", out)
	}
}

func TestRedactEncodedSecret(t *testing.T) {
	s := newTestScanner(t)
	encoded := base64.StdEncoding.EncodeToString([]byte("aws_access_key_id=" + fakeAWSKey() + "\n"))
	text := "first line\nblob: " + encoded + " end\n"
	got := s.ScanText("", []byte(text))
	if _, ok := findRule(got, "aws-access-token"); !ok {
		t.Fatalf("base64-encoded key not found: %v", ruleIDs(got))
	}
	out, n := s.Redact(text)
	if strings.Contains(out, encoded[:20]) || n < 1 {
		t.Fatalf("encoded secret survived: %q", out)
	}
	if !strings.HasPrefix(out, "first line\nblob: [REDACTED:aws-access-token]") || !strings.HasSuffix(out, " end\n") {
		t.Errorf("redaction not placed on the encoded span: %q", out)
	}
}

func TestRedactNothing(t *testing.T) {
	s := newTestScanner(t)
	text := "no secrets here, just prose about keys and tokens.\n"
	if out, n := s.Redact(text); out != text || n != 0 {
		t.Fatalf("Redact = %q, %d", out, n)
	}
}

func TestStripInvisible(t *testing.T) {
	tests := []struct {
		name, in, want string
		removed        int
	}{
		{"plain", "hello", "hello", 0},
		{"tag characters spell hidden text", "ok\U000E0049\U000E0067\U000E006E\U000E007F done", "ok done", 4},
		{"bidi overrides", "if x \u202Eelse\u202C {\u2066}\u2069", "if x else {}", 4},
		{"zero width", "a\u200bb\u200cc\u200dd", "abcd", 3},
		{"leading BOM kept, later ones removed", "\ufeffa\ufeffb", "\ufeffab", 1},
		{"other non-ASCII untouched", "naïve — ünïcödé ✓ 日本", "naïve — ünïcödé ✓ 日本", 0},
		{"invalid UTF-8 untouched", "a\xe2\x80b\xf3", "a\xe2\x80b\xf3", 0},
	}
	s := newTestScanner(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n := StripInvisible(tt.in)
			if got != tt.want || n != tt.removed {
				t.Fatalf("StripInvisible(%q) = %q, %d; want %q, %d", tt.in, got, n, tt.want, tt.removed)
			}
			out, n := s.Redact(tt.in)
			if out != tt.want || n != tt.removed {
				t.Fatalf("Redact(%q) = %q, %d; want %q, %d", tt.in, out, n, tt.want, tt.removed)
			}
		})
	}
}

func TestRedactSplitSecret(t *testing.T) {
	s := newTestScanner(t)
	key := fakeAWSKey()
	out, n := s.Redact("id=" + key[:5] + "\u200d" + key[5:12] + "\u202e\u200b" + key[12:])
	if out != "id=[REDACTED:aws-access-token]" || n != 4 {
		t.Fatalf("Redact = %q, %d; want the key joined and redacted, 3 removed + 1 redacted", out, n)
	}
}

func TestScannerConcurrent(t *testing.T) {
	s := newTestScanner(t, fakeCanary())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			text := fmt.Sprintf("n=%d key=%s canary=%s\n", i, fakeAWSKey(), fakeCanary())
			out, n := s.Redact(text)
			if n != 2 || strings.Contains(out, fakeAWSKey()) {
				errs <- fmt.Errorf("goroutine %d: %q, %d", i, out, n)
			}
			if got := s.ScanText("f", []byte(text)); len(got) != 2 {
				errs <- fmt.Errorf("goroutine %d: %v", i, ruleIDs(got))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestRulesBuiltOnce(t *testing.T) {
	a := newTestScanner(t)
	b := newTestScanner(t, fakeCanary())
	if a.detector != b.detector {
		t.Fatal("each NewScanner compiled gitleaks' rules again")
	}
	if RulesBuildTime() <= 0 {
		t.Fatal("RulesBuildTime not recorded")
	}
	t.Logf("gitleaks rules compiled once in %v (%d rules)", RulesBuildTime(), len(a.detector.Config.Rules))
}

func TestRedactedForm(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"short", "…(5 chars)"},
		{fakeAWSKey(), "AKIA…(20 chars)"},
	} {
		if got := redactedForm(tt.in); got != tt.want {
			t.Errorf("redactedForm(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPiecesKeepMatchesWhole: gitleaks sees the text in pieces of about
// chunkSize; secrets across a piece boundary must still be found whole.
func TestPiecesKeepMatchesWhole(t *testing.T) {
	s := newTestScanner(t)
	filler := func(n int) string {
		line := "ordinary words about nothing in particular, nothing at all\n"
		return strings.Repeat(line, n/len(line)+1)
	}
	for _, offset := range []int{-300, -120, -40, -1, 0, 1, 60} {
		before := filler(chunkSize + offset)
		text := before + fakePrivateKey() + filler(2000) +
			"aws_access_key_id =\n  " + fakeAWSKey() + "\n" + filler(chunkSize) +
			"ghp token " + fakeGitHubToken() + "\n"
		out, _ := s.Redact(text)
		for _, secret := range []string{"MIIEowIBAAKCAQEA", "PRIVATE KEY", fakeAWSKey(), fakeGitHubToken()} {
			if strings.Contains(out, secret) {
				t.Errorf("offset %d: %q survived", offset, secret)
			}
		}
		got := s.ScanText("big.txt", []byte(text))
		if f, ok := findRule(got, "private-key"); !ok || f.Line != strings.Count(before, "\n")+1 {
			t.Errorf("offset %d: private key finding %+v (want line %d)", offset, f, strings.Count(before, "\n")+1)
		}
	}
}

func TestPieces(t *testing.T) {
	text := strings.Repeat("0123456789\n", 5000)
	ps := pieces(text)
	if len(ps) < 2 || ps[0].start != 0 || ps[len(ps)-1].end != len(text) {
		t.Fatalf("pieces = %v", ps)
	}
	for i, p := range ps {
		if p.end <= p.start || (p.start > 0 && text[p.start-1] != '\n') {
			t.Fatalf("piece %d = %v does not start at a line", i, p)
		}
		if i > 0 && p.start > ps[i-1].end {
			t.Fatalf("gap before piece %d", i)
		}
	}
	if got := pieces(""); len(got) != 0 {
		t.Fatalf("pieces(\"\") = %v", got)
	}
	if got := pieces("no newline"); len(got) != 1 || got[0] != (span{0, 10}) {
		t.Fatalf("pieces(no newline) = %v", got)
	}
}
