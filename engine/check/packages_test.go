package check_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/javascript"
)

// isNumberLock pins is-number 7.0.0, a package without dependencies, as
// npm wrote it.
const isNumberLock = `{
  "name": "calc",
  "version": "1.0.0",
  "lockfileVersion": 3,
  "requires": true,
  "packages": {
    "": {
      "name": "calc",
      "version": "1.0.0",
      "devDependencies": {
        "is-number": "^7.0.0"
      }
    },
    "node_modules/is-number": {
      "version": "7.0.0",
      "resolved": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
      "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==",
      "dev": true,
      "license": "MIT",
      "engines": {
        "node": ">=0.12.0"
      }
    }
  }
}
`

// packagesRepo is a project whose code and tests import an installed
// package (is-number), with its lock committed and nothing installed:
// the base's double() accepts numeric strings it should refuse; the head
// fixes it with a new test. plant adds head files beside the fix.
func packagesRepo(t *testing.T, plant map[string]string) string {
	t.Helper()
	testenv.Node(t)
	testenv.Command(t, "npm", "apt-get install npm")
	r := newGitRepo(t)
	r.write(map[string]string{
		"package.json":      `{"name":"calc","version":"1.0.0","private":true,"devDependencies":{"is-number":"^7.0.0"}}` + "\n",
		"package-lock.json": isNumberLock,
		".gitignore":        "node_modules/\n",
		"calc.js":           "const isNumber = require('is-number');\nexports.double = (x) => { if (!isNumber(x)) throw new Error('nan'); return x * 2; };\n",
		"test/calc.test.js": "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst { double } = require('../calc.js');\ntest('doubles', () => { assert.strictEqual(double(2), 4); });\n",
	})
	r.commit("double")
	head := map[string]string{
		"calc.js":           "const isNumber = require('is-number');\nexports.double = (x) => { if (typeof x !== 'number' || !isNumber(x)) throw new Error('nan'); return x * 2; };\n",
		"test/calc.test.js": "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst { double } = require('../calc.js');\ntest('doubles', () => { assert.strictEqual(double(2), 4); });\ntest('refuses strings', () => { assert.throws(() => double('2')); });\n",
	}
	for k, v := range plant {
		head[k] = v
	}
	r.write(head)
	r.commit("refuse numeric strings")
	return r.dir
}

// TestAgentChangeGetsTheBasesLockedPackages: an agent's change has no
// checkout with node_modules; the base's lock is installed on the host
// (once: a second check reuses it) and its tests import the packages. A
// node_modules the agent committed does not replace them.
func TestAgentChangeGetsTheBasesLockedPackages(t *testing.T) {
	cache := t.TempDir()
	run := func(dir string) *verify.Report {
		t.Helper()
		rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: dir, Base: "HEAD~1", Head: "HEAD",
			Runner: host.New(), NoEvidence: true, TaskID: "t-packages", Packages: &javascript.Packages{Dir: cache, Runner: host.New()}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := run(packagesRepo(t, nil))
	if rep.Verdict != verify.Verified {
		t.Fatalf("verdict %s, want verified: %s (notes %v)", rep.Verdict, describe(rep), rep.Notes)
	}
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	installed := 0
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			installed++
			if _, err := os.Stat(filepath.Join(cache, e.Name(), "node_modules", "is-number", "package.json")); err != nil {
				t.Errorf("the cache entry has no is-number: %v", err)
			}
		}
	}
	if installed != 1 {
		t.Fatalf("%d installs in the cache, want 1", installed)
	}

	// A planted is-number that accepts anything: were it used, the base's
	// test 'doubles' would still pass but the head's fix would be a no-op.
	planted := run(packagesRepo(t, map[string]string{
		".gitignore":                          "",
		"node_modules/is-number/package.json": `{"name":"is-number","version":"7.0.0","main":"index.js"}` + "\n",
		"node_modules/is-number/index.js":     "module.exports = () => { throw new Error('planted'); };\n",
	}))
	if planted.Verdict == verify.Failed || planted.Verdict == verify.Error {
		t.Errorf("with a planted node_modules: verdict %s: %s", planted.Verdict, describe(planted))
	}
	for _, tr := range planted.Tests {
		if strings.Contains(tr.BaseDetail+tr.HeadDetail, "planted") {
			t.Errorf("the agent's node_modules ran: %s %s %s", tr.Name, tr.BaseDetail, tr.HeadDetail)
		}
	}
	if entries2, _ := os.ReadDir(cache); len(entries2) != len(entries) {
		t.Errorf("the same lock was installed again: %d entries, then %d", len(entries), len(entries2))
	}
}

// TestPackagesThatCannotInstall: an npm that fails leaves a note on the
// report; the check still judges.
func TestPackagesThatCannotInstall(t *testing.T) {
	rep, err := check.Run(context.Background(), check.Options{Scanner: testScanner(), Repo: packagesRepo(t, nil), Base: "HEAD~1", Head: "HEAD",
		Runner: host.New(), NoEvidence: true, TaskID: "t-packages",
		Packages: &javascript.Packages{Dir: t.TempDir(), Runner: host.New(), Npm: "/nonexistent/npm-bcode"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "npm is not installed") {
		t.Fatalf("notes %q, want one saying npm is missing", rep.Notes)
	}
}
