package secrets

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
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

// toolOutput64K is 64 KiB of what an agent's terminal returns: a real Go
// source file being viewed (net/http's server.go from GOROOT), `go test
// -v` output, an `env` listing and a base64 blob, as one tool result.
func toolOutput64K(b *testing.B) string {
	src, err := os.ReadFile(filepath.Join(goroot(b), "src", "net", "http", "server.go"))
	if err != nil {
		b.Fatalf("%v (the benchmark reads Go's own sources from GOROOT)", err)
	}
	var out strings.Builder
	out.Write(src[:40<<10])
	for i := 0; out.Len() < 56<<10; i++ {
		fmt.Fprintf(&out, "=== RUN   TestServeHTTP/case_%d\n    server_test.go:%d: GET /api/v1/items/%d: status 200, %d bytes in 1.2ms\n--- PASS: TestServeHTTP/case_%d (0.00s)\n", i, 100+i, i, 512+i, i)
	}
	out.WriteString("HOSTNAME=sandbox\nHOME=/home/sandbox\nPATH=/usr/local/go/bin:/usr/bin:/bin\nGOFLAGS=-mod=mod\nLANG=C.UTF-8\n")
	out.WriteString(base64.StdEncoding.EncodeToString(src[40<<10 : 50<<10]))
	return out.String()[:64<<10]
}

// BenchmarkRedact64K compares Redact (normalising) with legacyRedact (the
// redactor before it) on a 64 KiB tool output, with a scanner that knows a
// canary, an environment secret and three host paths, as the gateway's
// does. The ratio new/old is the cost of normalisation per model request;
// cpu-ns/op is the one to compare on a loaded machine.
func BenchmarkRedact64K(b *testing.B) {
	canary, _ := NewCanary()
	s, err := NewScannerKnown(Known{
		Values: []string{canary, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		Paths:  []string{"/home/alice", "/home/alice/.local/state/bcode", "/home/alice/src/project"},
	})
	if err != nil {
		b.Fatal(err)
	}
	text := toolOutput64K(b)
	for _, r := range []struct {
		name   string
		redact func(string) (string, int)
	}{
		{"old", func(t string) (string, int) { return legacyRedact(s, t) }},
		{"new", s.Redact},
	} {
		b.Run(r.name, func(b *testing.B) {
			if out, n := r.redact(text); n != 0 || out != text {
				b.Fatalf("%s redacted %d things in clean text", r.name, n)
			}
			b.SetBytes(int64(len(text)))
			start := cpuTime()
			for b.Loop() {
				r.redact(text)
			}
			if cpu := cpuTime() - start; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
