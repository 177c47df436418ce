package secrets

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Fake secrets are assembled at run time, never written as one literal, so
// bcode's own history scan (issue 8) does not find them in this file.

func fakeAWSKey() string { return "AKIA" + "QYLPMN5HHHFPZAM2" }

func fakeGitHubToken() string { return "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5" }

func fakePrivateKey() string {
	return "-----BEGIN RSA " + "PRIVATE KEY-----\n" +
		"MIIEowIBAAKCAQEAx4Ujb0aZ3k9Pq2Lr7tYvW1sNn8mQe5cJ6uH0dF3gK2iO9pXz\n" +
		"Tb4Vw7Ry1Eo6Ua8Is3Dk5Fj2Gh9Kl0Zx4Cv7Bn1Mq3Wa5Se8Dr6Ft2Gy9Hu0Ij3Ko\n" +
		"Lp5Qa7Ws1Ed4Rf8Tg2Yh6Uj0Ik3Ol9Pz5Xc7Vb1Nm4Qw8Er2Ty6Ui0Op3As5Df7G\n" +
		"-----END RSA " + "PRIVATE KEY-----\n"
}

func fakeCanary() string { return "bcode-canary-" + "7f3a9c1e5b2d4f60" }

func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("BCODE_REQUIRE_ALL") == "1" {
			t.Fatal("git not found: install git (apt-get install git)")
		}
		t.Skip("git not found: install git (apt-get install git)")
	}
}

func newTestScanner(t testing.TB, extra ...string) *Scanner {
	t.Helper()
	s, err := NewScanner(extra...)
	if err != nil {
		t.Fatalf("NewScanner: %v", err)
	}
	return s
}

// testRepo is a real git repository in a temp dir.
type testRepo struct {
	t   testing.TB
	dir string
}

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	requireGit(t)
	r := &testRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{
		"-c", "user.name=t", "-c", "user.email=t@example.com",
		"-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false",
	}, args...)...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *testRepo) write(p, content string) {
	r.t.Helper()
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
	return r.git("rev-parse", "HEAD")
}
