package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox/docker/dockertest"
)

// TestCheckInDockerSandbox: `bcode check --sandbox docker` verifies a
// change with its tests run in the agent's container sandbox. The change's
// new test also tries to write a file on the host, outside the checkout:
// under the host runner it does (the control), in the sandbox it cannot,
// and the verdict is the same either way.
func TestCheckInDockerSandbox(t *testing.T) {
	evidenceTools(t)
	e := dockertest.Connect(t)
	const ref = "bcode-sandbox:checktest"
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })

	// The real CLI binary: it serves the seeded build cache to the
	// containers (`bcode sandbox gocache`), as an installed bcode does.
	bin := filepath.Join(t.TempDir(), "bcode")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building bcode: %v\n%s", err, out)
	}
	state := t.TempDir()
	bcode := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "BCODE_STATE="+state, "BCODE_SANDBOX_GOCACHE="+filepath.Join(state, "seed"))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		t.Logf("bcode %s: %s", strings.Join(args[:1], " "), time.Since(start).Round(time.Millisecond))
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
	if code, _, errOut := bcode("sandbox", "build", "--image", ref); code != 0 {
		t.Fatalf("bcode sandbox build: exit %d\n%s", code, errOut)
	}

	escape := filepath.Join(t.TempDir(), "written-by-the-test")
	repo := evidenceRepo(t, map[string]string{
		".bcode/config.toml": "[sandbox]\nimage = \"" + ref + "\"\n",
		"go.mod":             "module lim\n\ngo 1.21\n",
		"lim.go":             "package lim\n\n// Clamp limits n to at most 10.\nfunc Clamp(n int) int { return n }\n",
		"lim_test.go":        "package lim\n\nimport \"testing\"\n\nfunc TestClampSmall(t *testing.T) {\n\tif Clamp(3) != 3 {\n\t\tt.Fatal(Clamp(3))\n\t}\n}\n",
	}, map[string]string{
		"lim.go": "package lim\n\n// Clamp limits n to at most 10.\nfunc Clamp(n int) int {\n\tif n > 10 {\n\t\treturn 10\n\t}\n\treturn n\n}\n",
		"clamp_test.go": "package lim\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n" +
			"func TestClampLarge(t *testing.T) {\n\t_ = os.WriteFile(" + strconv.Quote(escape) + ", []byte(\"x\"), 0o644)\n" +
			"\tif Clamp(11) != 10 || Clamp(10) != 10 {\n\t\tt.Fatal(Clamp(11))\n\t}\n}\n",
	})

	code, out, errOut := bcode("check", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--sandbox", "docker", "--json", "-q")
	var rep struct {
		Verdict string `json:"verdict"`
		Runner  string `json:"runner"`
		Tests   []struct {
			Name     string `json:"name"`
			Credited bool   `json:"credited"`
		} `json:"tests"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("exit %d, not a JSON report: %v\n%s\n%s", code, err, out, errOut)
	}
	if code != 0 || rep.Verdict != "verified" || rep.Runner != "docker" {
		t.Fatalf("in the sandbox: exit %d, verdict %q, runner %q\n%s\n%s", code, rep.Verdict, rep.Runner, out, errOut)
	}
	if len(rep.Tests) != 1 || rep.Tests[0].Name != "TestClampLarge" || !rep.Tests[0].Credited {
		t.Errorf("tests %+v, want TestClampLarge credited", rep.Tests)
	}
	if _, err := os.Stat(escape); err == nil {
		t.Fatalf("the change's test wrote %s on the host from inside the sandbox", escape)
	}

	// Control: on the host the same test does write there, so the absence
	// above is the sandbox's doing.
	code, out, _ = bcode("check", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--json", "-q", "--no-evidence")
	if code != 0 || !strings.Contains(out, `"runner": "host"`) {
		t.Fatalf("on the host: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(escape); err != nil {
		t.Errorf("control: the test did not write %s on the host either: %v", escape, err)
	}

	if code, _, errOut := bcode("check", "--repo", repo, "--sandbox", "vm"); code != exitError || !strings.Contains(errOut, "want host or docker") {
		t.Errorf("--sandbox vm: exit %d, %s", code, errOut)
	}

	// JavaScript and Rust in the same sandbox: node from the host's /usr,
	// the host's Rust toolchain from its read-only mount, offline.
	for _, c := range []struct {
		lang, credited string
		base, head     map[string]string
	}{
		{"javascript", "above", map[string]string{
			"package.json":      "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\"\n}\n",
			"calc.js":           "exports.clamp = (x, hi) => x;\n",
			"test/calc.test.js": "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst { clamp } = require('../calc.js');\ntest('inside', () => { assert.strictEqual(clamp(5, 10), 5); });\n",
		}, map[string]string{
			"calc.js":           "exports.clamp = (x, hi) => Math.min(x, hi);\n",
			"test/calc.test.js": "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst { clamp } = require('../calc.js');\ntest('inside', () => { assert.strictEqual(clamp(5, 10), 5); });\ntest('above', () => { assert.strictEqual(clamp(15, 10), 10); });\n",
		}},
		// Its tests import an installed package: the base's lock is
		// installed on the host and shown to the container read-only.
		{"javascript with locked packages", "refuses strings", map[string]string{
			"package.json":      `{"name":"calc","version":"1.0.0","private":true,"devDependencies":{"is-number":"^7.0.0"}}` + "\n",
			"package-lock.json": isNumberLock,
			".gitignore":        "node_modules/\n",
			"calc.js":           "const isNumber = require('is-number');\nexports.double = (x) => { if (!isNumber(x)) throw new Error('nan'); return x * 2; };\n",
			"test/calc.test.js": "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst { double } = require('../calc.js');\ntest('doubles', () => { assert.strictEqual(double(2), 4); });\n",
		}, map[string]string{
			"calc.js":           "const isNumber = require('is-number');\nexports.double = (x) => { if (typeof x !== 'number' || !isNumber(x)) throw new Error('nan'); return x * 2; };\n",
			"test/calc.test.js": "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst { double } = require('../calc.js');\ntest('doubles', () => { assert.strictEqual(double(2), 4); });\ntest('refuses strings', () => { assert.throws(() => double('2')); });\n",
		}},
		{"rust", "tests::above", map[string]string{
			"Cargo.toml": "[package]\nname = \"clamp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
			".gitignore": "/target\n",
			"src/lib.rs": "pub fn clamp(x: i32, hi: i32) -> i32 { x }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn inside() { assert_eq!(super::clamp(5, 10), 5); }\n}\n",
		}, map[string]string{
			"src/lib.rs": "pub fn clamp(x: i32, hi: i32) -> i32 { x.min(hi) }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn inside() { assert_eq!(super::clamp(5, 10), 5); }\n    #[test]\n    fn above() { assert_eq!(super::clamp(15, 10), 10); }\n}\n",
		}},
	} {
		c.base[".bcode/config.toml"] = "[sandbox]\nimage = \"" + ref + "\"\n"
		repo := evidenceRepo(t, c.base, c.head)
		code, out, errOut := bcode("check", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--sandbox", "docker", "--json", "-q", "--no-evidence")
		var rep struct {
			Verdict string `json:"verdict"`
			Tests   []struct {
				Name     string `json:"name"`
				Credited bool   `json:"credited"`
			} `json:"tests"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Verdict != "verified" {
			t.Errorf("%s in the sandbox: exit %d, verdict %q (%v)\n%s\n%s", c.lang, code, rep.Verdict, err, out, errOut)
			continue
		}
		if len(rep.Tests) != 1 || rep.Tests[0].Name != c.credited || !rep.Tests[0].Credited {
			t.Errorf("%s in the sandbox: tests %+v, want %s credited", c.lang, rep.Tests, c.credited)
		}
	}
}

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
