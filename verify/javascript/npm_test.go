package javascript

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
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
// package.json and package-lock.json), installed by the production
// installer (Packages: npm ci --ignore-scripts, once per lock) into
// os.UserCacheDir()/bcode-test/packages and reused by every later test
// process while the lock is unchanged. Without node or npm the test is
// skipped (failed under BCODE_REQUIRE_ALL=1).
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

// installFixture installs testdata/<name>'s locked packages with Packages.
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
	p := &Packages{Dir: filepath.Join(cache, "bcode-test", "packages"), Runner: host.New(), Npm: npm}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mods, err := p.Install(ctx, []LockedProject{{Dir: ".", Manifest: pkg, Lock: lock}})
	if err != nil {
		return "", err
	}
	return mods["."], nil
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
