package app

import (
	"context"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox"
)

// TestHeadConfigFollowsHEAD: the base configuration a pack reads at HEAD
// is kept per HEAD tree, so a new commit that changes the file is read
// afresh, a checkout of the old commit gets the old file back, and a
// commit that removes it gets the defaults.
func TestHeadConfigFollowsHEAD(t *testing.T) {
	t.Setenv(sandbox.CacheEnv, t.TempDir())
	r := testrepo.FromFiles(t, map[string]string{".bcode/config.toml": "[model]\nendpoint = \"http://127.0.0.1:1111\"\n"})
	ctx := context.Background()
	endpoint := func() string { t.Helper(); return baseConfig(ctx, r.Dir, "HEAD").Model.Endpoint }
	for range 2 { // the second read is the kept one
		if got := endpoint(); got != "http://127.0.0.1:1111" {
			t.Fatalf("first commit: endpoint %q", got)
		}
	}
	r.WriteFile(".bcode/config.toml", "[model]\nendpoint = \"http://127.0.0.1:2222\"\n")
	r.Git("commit", "-qam", "second")
	if got := endpoint(); got != "http://127.0.0.1:2222" {
		t.Fatalf("new commit: endpoint %q", got)
	}
	r.Git("checkout", "-q", "HEAD~1")
	if got := endpoint(); got != "http://127.0.0.1:1111" {
		t.Fatalf("old commit again: endpoint %q", got)
	}
	r.Git("checkout", "-q", "main")
	r.Git("rm", "-q", ".bcode/config.toml")
	r.Git("commit", "-qm", "none")
	if got, want := endpoint(), config.Default().Model.Endpoint; got != want {
		t.Fatalf("no config: endpoint %q, want the default %q", got, want)
	}
}
