package secrets

import (
	"fmt"
	"strings"
	"testing"
)

// promptText is ~1 MiB of what the gateway sends a model: source code, test
// output and prose, with a secret every 64 KiB when withSecrets is set.
func promptText(withSecrets bool) string {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "func handler%d(w http.ResponseWriter, r *http.Request) {\n", i)
		fmt.Fprintf(&b, "\tif err := store.Save(r.Context(), item%d); err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t}\n}\n", i)
		fmt.Fprintf(&b, "--- FAIL: TestHandler%d (0.01s)\n    handler_test.go:%d: got status 500, want 200 (token expired?)\n", i, 40+i%100)
		b.WriteString("The reviewer asked us to check the password reset flow and the API key rotation.\n")
		if withSecrets && i%300 == 0 {
			fmt.Fprintf(&b, "AWS_ACCESS_KEY_ID=%s\nGH_TOKEN=%s\n", fakeAWSKey(), fakeGitHubToken())
		}
	}
	return b.String()
}

func benchmarkRedact(b *testing.B, withSecrets bool) {
	s := newTestScanner(b, fakeCanary(), "some-env-secret-value-123")
	text := promptText(withSecrets)
	_, n := s.Redact(text)
	if withSecrets == (n == 0) {
		b.Fatalf("redactions = %d", n)
	}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		s.Redact(text)
	}
}

// BenchmarkRedact reports the gateway's redaction throughput in MB/s.
func BenchmarkRedact(b *testing.B)      { benchmarkRedact(b, true) }
func BenchmarkRedactClean(b *testing.B) { benchmarkRedact(b, false) }

// BenchmarkRedactSmall is one typical chat message.
func BenchmarkRedactSmall(b *testing.B) {
	s := newTestScanner(b, fakeCanary())
	text := promptText(true)[:4096]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.Redact(text)
	}
}

// BenchmarkBuildRules is the one-time cost NewScanner pays on first use.
func BenchmarkBuildRules(b *testing.B) {
	for b.Loop() {
		if _, err := buildDetector(); err != nil {
			b.Fatal(err)
		}
	}
}
