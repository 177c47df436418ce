package javascript

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// fixtureModules maps a fixture under testdata/ to its installed
// node_modules, one `npm ci` per fixture and test process at most.
var fixtureModules sync.Map // name -> *fixtureInstall

type fixtureInstall struct {
	once    sync.Once
	modules string
	err     error
}

// npmFixture returns the node_modules of testdata/<name> (its committed
// package.json and package-lock.json), installed by `npm ci` into
// os.UserCacheDir()/bcode-test/<name>-<hash of the lock> and reused by
// every later test process while the lock is unchanged. Without node or
// npm the test is skipped (failed under BCODE_REQUIRE_ALL=1).
func npmFixture(t *testing.T, name string) string {
	t.Helper()
	testenv.Node(t)
	npm := testenv.Command(t, "npm", "install npm (Debian: apt-get install npm)")
	v, _ := fixtureModules.LoadOrStore(name, &fixtureInstall{})
	fi := v.(*fixtureInstall)
	fi.once.Do(func() { fi.modules, fi.err = installFixture(npm, name) })
	if fi.err != nil {
		testenv.Missing(t, "npm ci for testdata/"+name+": "+fi.err.Error())
	}
	return fi.modules
}

// installFixture runs npm ci for testdata/<name> unless its cache entry is
// complete. The install happens in a fresh directory renamed into place,
// so concurrent test processes never see half an install.
func installFixture(npm, name string) (string, error) {
	src := filepath.Join("testdata", name)
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return "", err
	}
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir() // no HOME: a cache for this machine's session
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	parent := filepath.Join(cache, "bcode-test")
	final := filepath.Join(parent, name+"-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(final, "node_modules")); err == nil {
		return filepath.Join(final, "node_modules"), nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, name+"-installing-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for file, data := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, file), data, 0o644); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New(err.Error() + ": " + string(out))
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(filepath.Join(final, "node_modules")); statErr != nil {
			return "", err
		}
		// Another process finished first: its install is the same.
	}
	pruneOld(parent, name, final)
	return filepath.Join(final, "node_modules"), nil
}

// pruneOld removes the installs of the fixture's earlier locks: name-
// and 16 hex digits (never one being installed, which another process may
// be writing, nor another fixture's).
func pruneOld(parent, name, keep string) {
	old, _ := filepath.Glob(filepath.Join(parent, name+"-"+strings.Repeat("[0-9a-f]", 16)))
	for _, d := range old {
		if d != keep {
			os.RemoveAll(d)
		}
	}
}

// fixturePackageJSON returns testdata/<name>/package.json, for a fixture
// repository's files.
func fixturePackageJSON(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// linkedAdapter is the adapter with a fixture's installed node_modules
// linked into each snapshot it runs tests in, as a project's own
// node_modules would be there.
type linkedAdapter struct {
	*Adapter
	modules string
}

func (a linkedAdapter) link(dir string) error {
	err := os.Symlink(a.modules, filepath.Join(dir, "node_modules"))
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}

func (a linkedAdapter) RunTests(ctx context.Context, r sandbox.Runner, dir string, tests []verify.Test, opts verify.RunOptions) ([]verify.TestResult, error) {
	if err := a.link(dir); err != nil {
		return nil, err
	}
	return a.Adapter.RunTests(ctx, r, dir, tests, opts)
}

func (a linkedAdapter) RunSuite(ctx context.Context, r sandbox.Runner, dir string, targets []string, timeout time.Duration) (verify.SuiteResult, error) {
	if err := a.link(dir); err != nil {
		return verify.SuiteResult{}, err
	}
	return a.Adapter.RunSuite(ctx, r, dir, targets, timeout)
}
