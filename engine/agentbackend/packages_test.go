package agentbackend

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/javascript"
)

// TestAgentSeesTheBaseLockedPackages: the scripted model drives `bcode
// task run` on a project whose base locks picocolors. In the agent's own
// container (offline), node resolves it from the worktree, node_modules
// there is read-only, and the agent's edits to package.json and
// package-lock.json install nothing: the version stays the base's and a
// package only the edit names is not there.
func TestAgentSeesTheBaseLockedPackages(t *testing.T) {
	testenv.Command(t, "npm", "install npm (Debian: apt-get install npm)")
	requireSandbox(t)
	model := modeltest.New(modeltest.Options{Tools: true},
		terminal(`node -e "const pc = require('picocolors'); console.log('green=' + typeof pc.green + ' version=' + require('picocolors/package.json').version)" 2>&1; `+
			`touch node_modules/planted 2>&1; echo touch=$?; node -e "require('./greet.js')" && echo greet=ok`),
		editor(map[string]any{"command": "str_replace", "path": "package.json", "old_str": `"picocolors": "1.1.1"`, "new_str": `"picocolors": "1.1.0", "left-pad": "1.3.0"`}),
		editor(map[string]any{"command": "str_replace", "path": "package-lock.json", "old_str": `"version": "1.1.1"`, "new_str": `"version": "1.1.0"`}),
		terminal(`node -e "console.log('after=' + require('picocolors/package.json').version)" 2>&1; node -e "require('left-pad')" 2>&1 | grep -o "Cannot find module 'left-pad'"`),
		finish("Looked at the installed packages."),
	)
	f := newFixture(t, "packages", model, nil)
	id := f.create("Check which packages the project has installed.")
	out, errOut, _ := f.bcode(nil, "task", "run", id)
	obs := strings.Join(observations(t, f.ledger(), id), "\n")
	for _, want := range []string{
		"green=function version=1.1.1",     // resolved from the worktree, as locked by the base
		"Read-only file system", "touch=1", // node_modules cannot be written
		"greet=ok",                      // the project's own code loads it
		"after=1.1.1",                   // the agent's edit of the lock installed nothing
		"Cannot find module 'left-pad'", // nor did its edit of package.json
	} {
		if !strings.Contains(obs, want) {
			t.Errorf("the agent's observations lack %q:\n%s\nstdout:\n%s\nstderr:\n%s\n%s", want, obs, out, errOut, f.agentLogs())
		}
	}
	if model.Remaining() != 0 {
		t.Errorf("script: %d steps left, failures %v", model.Remaining(), model.Failures())
	}
	if got := f.git("status", "--porcelain", "--ignored"); strings.Contains(got, "node_modules") {
		t.Errorf("the user's checkout has a node_modules after the task:\n%s", got)
	}
}

// TestPackageMountsComeFromTheBase: the packages the agent's container is
// given are the base's lock's, installed on the host, whatever the
// worktree's package.json and package-lock.json now say; a node_modules
// link the worktree holds is removed so the mount lands in the worktree.
func TestPackageMountsComeFromTheBase(t *testing.T) {
	testenv.Command(t, "npm", "install npm (Debian: apt-get install npm)")
	testenv.Git(t)
	manifest := `{"name": "greet", "version": "1.0.0", "private": true, "dependencies": {"picocolors": "1.1.1"}}` + "\n"
	lock := `{"name": "greet", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {` +
		`"": {"name": "greet", "version": "1.0.0", "dependencies": {"picocolors": "1.1.1"}}, ` +
		`"node_modules/picocolors": {"version": "1.1.1", "integrity": "sha512-xceH2snhtb5M9liqDsmEw56le376mTZkEX/jEb/RxNFyegNul7eNslCXP9FDj/Lcu0X8KEyMceP2ntpaHrDEVA==", "license": "ISC"}}}` + "\n"
	r := testrepo.New(t)
	r.Write(map[string]string{"web/package.json": manifest, "web/package-lock.json": lock, "README": "greet\n"})
	base := r.Commit("base")
	repo := r.Dir

	// The worktree: the agent edited both files and planted a link.
	worktree := t.TempDir()
	writeTestFile(t, filepath.Join(worktree, "web", "package.json"), strings.Replace(manifest, "1.1.1", "1.1.0", 1))
	writeTestFile(t, filepath.Join(worktree, "web", "package-lock.json"), "{}")
	if err := os.Symlink("/etc", filepath.Join(worktree, "web", "node_modules")); err != nil {
		t.Fatal(err)
	}

	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	p := &javascript.Packages{Dir: filepath.Join(cache, "bcode-test", "packages"), Runner: host.New()}
	a := &Agent{opts: Options{Packages: p}}
	mounts, err := a.packageMounts(context.Background(), engine.Task{Repo: repo, Base: base}, worktree)
	if err != nil {
		testenv.Missing(t, "npm ci of picocolors: "+err.Error())
	}
	want, err := p.Install(context.Background(), []javascript.LockedProject{{Dir: "web", Manifest: []byte(manifest), Lock: []byte(lock)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 || mounts[0].Source != want["web"] || mounts[0].Target != filepath.Join(worktree, "web", "node_modules") {
		t.Fatalf("mounts %+v, want the base lock's %s at the worktree's web/node_modules", mounts, want["web"])
	}
	if b, err := os.ReadFile(filepath.Join(mounts[0].Source, "picocolors", "package.json")); err != nil || !strings.Contains(string(b), `"version": "1.1.1"`) {
		t.Errorf("the mounted packages are not picocolors 1.1.1: %v\n%s", err, b)
	}
	if _, err := os.Lstat(filepath.Join(worktree, "web", "node_modules")); !os.IsNotExist(err) {
		t.Errorf("the planted node_modules link is still there: %v", err)
	}

	// A project directory the agent turned into a link out of the
	// worktree: no mount there, nothing outside touched, and a warning.
	outside := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(outside, "node_modules")); err != nil {
		t.Fatal(err)
	}
	escaped := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(escaped, "web")); err != nil {
		t.Fatal(err)
	}
	mounts, err = a.packageMounts(context.Background(), engine.Task{Repo: repo, Base: base}, escaped)
	if err == nil || len(mounts) != 0 {
		t.Errorf("a project directory linked out of the worktree: mounts %+v, error %v; want none and a warning", mounts, err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "node_modules")); err != nil {
		t.Errorf("the link outside the worktree was touched: %v", err)
	}

	// A base without a lock file: nothing to install, no mount, no error.
	r.Git("rm", "-q", "web/package-lock.json")
	mounts, err = a.packageMounts(context.Background(), engine.Task{Repo: repo, Base: r.Commit("no lock")}, t.TempDir())
	if err != nil || len(mounts) != 0 {
		t.Errorf("a base without a package-lock.json: %+v, %v; want no mount", mounts, err)
	}
}

func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
