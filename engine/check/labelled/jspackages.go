package labelled

import (
	"context"
	"os"
	"path/filepath"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/javascript"
)

// InstallJSPackages gives a JavaScript case's repository in dir the
// packages its base's package-lock.json pins (the runner alone), as the
// user's installed node_modules beside the checkout: npm ci
// --ignore-scripts once per lock into a cache the corpus's runs share (a
// case's lock is one of verify/javascript's fixtures, byte for byte), and
// an untracked node_modules link the gate's snapshots link to in turn. A
// case without a lock needs nothing. TestRealCorpus and bcode bench perf
// gate -real both lay cases out through it.
func (c Case) InstallJSPackages(ctx context.Context, dir string) error {
	var manifest, lock []byte
	for _, f := range c.Base {
		switch f.Name {
		case "package.json":
			manifest = f.Data
		case "package-lock.json":
			lock = f.Data
		}
	}
	if lock == nil {
		return nil
	}
	cache, err := sandbox.CacheDir("test-packages")
	if err != nil {
		cache = filepath.Join(os.TempDir(), "bcode-test-packages")
	}
	p := &javascript.Packages{Dir: cache, Runner: host.New()}
	mods, err := p.Install(ctx, []javascript.LockedProject{{Dir: ".", Manifest: manifest, Lock: lock}})
	if err != nil {
		return err
	}
	return os.Symlink(mods["."], filepath.Join(dir, "node_modules"))
}
