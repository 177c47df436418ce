package secrets

import (
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
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

func requireGit(t testing.TB) { t.Helper(); testenv.Git(t) }

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
	*testrepo.Repo
	t testing.TB
}

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	return &testRepo{Repo: testrepo.New(t), t: t}
}
