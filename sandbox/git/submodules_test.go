package git

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubmoduleURLsComeFromTheTrustedCommit: an agent's commit adds a
// gitlink and a .gitmodules whose file:// URL names another repository on
// the host. The control exports with the agent's commit as the source of
// URLs and the other repository's file lands in the snapshot; with the
// base as the source (what the gate does) the URL is never followed and
// the path stays empty.
func TestSubmoduleURLsComeFromTheTrustedCommit(t *testing.T) {
	ctx := context.Background()
	secret := newFixture(t)
	secret.write("credentials.txt", "the user's other project\n")
	secret.git("add", "-A")
	secret.git("commit", "-q", "-m", "private")
	secretID := strings.TrimSpace(secret.git("rev-parse", "HEAD"))

	f := newFixture(t)
	f.write("main.go", "package main\n")
	f.git("add", "-A")
	f.git("commit", "-q", "-m", "base")
	base := strings.TrimSpace(f.git("rev-parse", "HEAD"))
	// The agent's commit: a gitlink to the secret repository's commit,
	// with the URL that would fetch it.
	f.write(".gitmodules", "[submodule \"leak\"]\n\tpath = leak\n\turl = file://"+secret.dir+"\n")
	f.git("update-index", "--add", "--cacheinfo", "160000,"+secretID+",leak")
	f.git("add", ".gitmodules")
	f.git("commit", "-q", "-m", "agent")
	head := strings.TrimSpace(f.git("rev-parse", "HEAD"))
	r := f.open()

	control := t.TempDir()
	if err := r.ExportWithSubmodules(ctx, head, head, control); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(control, "leak", "credentials.txt")); err != nil {
		t.Fatalf("control: the agent's URL was not followed (%v); the fixture is not armed", err)
	}

	dest := t.TempDir()
	if err := r.ExportWithSubmodules(ctx, head, base, dest); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dest, "leak")); len(entries) != 0 {
		t.Fatalf("the agent's .gitmodules pulled a host repository into the snapshot: %v", entries)
	}
}
