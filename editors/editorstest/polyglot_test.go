package editorstest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify/javascript"
)

// survivorCase is a checkout whose tests try a discount only at 1 and 20:
// once the user moves its boundary from `n >= 10` to `n > 10`
// (moveBoundary, or typed in the editor), the `>` → `>=` mutant
// survives, and an editor must show it.
type survivorCase struct {
	Repo     string // the checkout
	File     string // the changed file, relative to Repo
	Filetype string // what Neovim calls its language
	Line     int    // 0-based line of the survivor
	Col      int    // 0-based column of the `>` of `n > 10`
	Text     string // the changed line's text, as an editor shows it
	Mutated  string // the survivor's line, as its diff shows it
	Covering string // the test that ran against it, as evidence names it
	TestFile string // that test's file, relative to Repo
	TestLine int    // 0-based line of its declaration
}

// survivorMessage is what the survivor's diagnostic must say: the
// JavaScript and Rust engines name the operator alone.
const survivorMessage = "`>` → `>=`"

// newCheckout commits files as the base of a fresh repository and
// returns its path.
func newCheckout(t *testing.T, files map[string]string) string {
	t.Helper()
	testenv.Git(t)
	repo := t.TempDir()
	for name, text := range files {
		writeFile(t, filepath.Join(repo, filepath.FromSlash(name)), text)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "base"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=fixture", "-c", "user.email=fixture@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// moveBoundary is the user's change: `n >= 10` becomes `n > 10`.
func (c survivorCase) moveBoundary(t *testing.T) survivorCase {
	t.Helper()
	p := filepath.Join(c.Repo, filepath.FromSlash(c.File))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, strings.Replace(string(b), "n >= 10", "n > 10", 1))
	return c
}

const tsPrice = `// The discount in percent for a basket of n items.
export function discount(n: number): number {
  if (n >= 10) {
    return 5;
  }
  return 0;
}
`

// typeScriptCase is a TypeScript project whose tests node --test runs
// through tsx: its node_modules are the vitest fixture's locked packages
// (verify/javascript/testdata/vitest, which hold tsx), installed once per
// lock by bcode's own installer into the test cache and linked in, as a
// user's `npm ci` would leave them.
func typeScriptCase(t *testing.T) survivorCase {
	t.Helper()
	testenv.Node(t)
	testenv.Command(t, "npm", "install npm (Debian: apt-get install npm)")
	src := filepath.Join(repoRoot(t), "verify", "javascript", "testdata", "vitest")
	manifest, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	p := &javascript.Packages{Dir: filepath.Join(cache, "bcode-test", "packages"), Runner: host.New()}
	mods, err := p.Install(context.Background(), []javascript.LockedProject{{Dir: ".", Manifest: manifest, Lock: lock}})
	if err != nil {
		testenv.Missing(t, "npm ci of the vitest fixture: "+err.Error())
	}
	repo := newCheckout(t, map[string]string{
		".gitignore":         "node_modules\n",
		"package.json":       `{"name": "shop", "private": true, "devDependencies": {"tsx": "4.19.2"}}` + "\n",
		"src/price.ts":       tsPrice,
		"test/price.test.ts": "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { discount } from '../src/price.ts';\n\ntest('discount', () => {\n  assert.equal(discount(20), 5);\n  assert.equal(discount(1), 0);\n});\n",
	})
	if err := os.Symlink(mods["."], filepath.Join(repo, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return survivorCase{Repo: repo, File: "src/price.ts", Filetype: "typescript", Line: 2, Col: 8, Text: "if (n > 10)", Mutated: "if (n >= 10)",
		Covering: "test/price.test.ts::discount", TestFile: "test/price.test.ts", TestLine: 4}
}

const rustPrice = `/// The discount in percent for a basket of n items.
pub fn discount(n: u32) -> u32 {
    if n >= 10 {
        5
    } else {
        0
    }
}
`

// rustCase is a cargo crate with no dependencies whose integration test
// tries the discount far from its boundary.
func rustCase(t *testing.T) survivorCase {
	t.Helper()
	testenv.Command(t, "cargo", "apt-get install cargo (or rustup's, with ~/.cargo/bin on PATH)")
	repo := newCheckout(t, map[string]string{
		".gitignore":        "target\n",
		"Cargo.toml":        "[package]\nname = \"shop\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"src/lib.rs":        rustPrice,
		"tests/discount.rs": "#[test]\nfn discount_far_from_the_boundary() {\n    assert_eq!(shop::discount(20), 5);\n    assert_eq!(shop::discount(1), 0);\n}\n",
	})
	return survivorCase{Repo: repo, File: "src/lib.rs", Filetype: "rust", Line: 2, Col: 9, Text: "if n > 10", Mutated: "if n >= 10",
		Covering: "tests/discount.rs::discount_far_from_the_boundary", TestFile: "tests/discount.rs", TestLine: 1}
}

// nvimSurvivor runs nvim-plugin/tests/survivor.lua headless on c against
// the real bcode-ls: the survivor's diagnostic after a save, on its line
// and column with bcode's source, and bcode's code actions there.
func nvimSurvivor(t *testing.T, c survivorCase) {
	t.Helper()
	ls := bcodeLS(t)
	start := time.Now()
	cmd := exec.Command("nvim", "--headless", "-u", "NONE", "-i", "NONE", "-c", "luafile tests/survivor.lua")
	cmd.Dir = filepath.Join(repoRoot(t), "nvim-plugin")
	cmd.Env = append(os.Environ(), "BCODE_LS="+ls, "BCODE_STATE="+t.TempDir(),
		"BCODE_SV_FILE="+filepath.Join(c.Repo, filepath.FromSlash(c.File)), "BCODE_SV_FILETYPE="+c.Filetype,
		"BCODE_SV_LINE="+strconv.Itoa(c.Line), "BCODE_SV_COL="+strconv.Itoa(c.Col), "BCODE_SV_MESSAGE="+survivorMessage,
		"BCODE_SV_COVERING="+c.Covering, "BCODE_SV_TEST_FILE="+c.TestFile, "BCODE_SV_TEST_LINE="+strconv.Itoa(c.TestLine))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# pass 1 fail 0") {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "# actions ") {
			t.Log(l)
		}
	}
	t.Logf("Neovim: the survivor and its code actions in %s", time.Since(start).Round(time.Second))
}

// TestNeovimTypeScriptSurvivor: Neovim with the plugin and the real
// bcode-ls shows a surviving mutant of a .ts file after a save, and offers
// bcode's code actions on it.
func TestNeovimTypeScriptSurvivor(t *testing.T) {
	_, err := exec.LookPath("nvim")
	need(t, err == nil, "nvim", "apt-get install neovim")
	nvimSurvivor(t, typeScriptCase(t).moveBoundary(t))
}

// TestNeovimRustSurvivor: the same for a .rs file of a cargo crate.
func TestNeovimRustSurvivor(t *testing.T) {
	_, err := exec.LookPath("nvim")
	need(t, err == nil, "nvim", "apt-get install neovim")
	nvimSurvivor(t, rustCase(t).moveBoundary(t))
}

var (
	vsixOnce   sync.Once
	packagedAt string
	vsixErr    error
	vsixDir    string
)

// packagedVSIX is the .vsix as a user gets it (`npm run package`), built
// once per test binary and copied away so a concurrent TestVSCodePackage
// does not rewrite it under code-server.
func packagedVSIX(t *testing.T, ext string) string {
	t.Helper()
	vsixOnce.Do(func() {
		cmd := exec.Command("npm", "run", "-s", "package")
		cmd.Dir = ext
		if out, err := cmd.CombinedOutput(); err != nil {
			vsixErr = &buildFailure{err: err, out: string(out)}
			return
		}
		b, err := os.ReadFile(filepath.Join(ext, "bcode.vsix"))
		if err == nil {
			vsixDir, err = os.MkdirTemp("", "bcode-vsix-")
		}
		if err == nil {
			packagedAt = filepath.Join(vsixDir, "bcode.vsix")
			err = os.WriteFile(packagedAt, b, 0o644)
		}
		vsixErr = err
	})
	if vsixErr != nil {
		t.Fatalf("packaging the extension: %v", vsixErr)
	}
	return packagedAt
}

// vscodeSurvivor runs editors/vscode-e2e/survivor.mjs on c: code-server
// with the packaged extension and the real bcode-ls, driven in chromium,
// where the user types the boundary's change and saves; bcode's squiggle,
// its Problems row (source, line and column) and its quick fixes follow.
func vscodeSurvivor(t *testing.T, c survivorCase) {
	t.Helper()
	if testing.Short() {
		t.Skip("a browser session: not in -short")
	}
	dir, chromium := e2eDir(t)
	vsix := packagedVSIX(t, vscodeDir(t))
	ls := bcodeLS(t)
	start := time.Now()
	cmd := exec.Command("node", "survivor.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), rustHomeEnv()...)
	cmd.Env = append(cmd.Env, "BCODE_LS="+ls, "BCODE_STATE="+t.TempDir(), "BCODE_VSIX="+vsix, "BCODE_E2E_CHROMIUM="+chromium,
		"BCODE_SV_REPO="+c.Repo, "BCODE_SV_FILE="+c.File, "BCODE_SV_LINE="+strconv.Itoa(c.Line+1), "BCODE_SV_COL="+strconv.Itoa(c.Col+1),
		"BCODE_SV_TEXT="+c.Text, "BCODE_SV_MESSAGE="+survivorMessage, "BCODE_SV_MUTATED="+c.Mutated,
		"BCODE_SV_COVERING="+c.Covering, "BCODE_SV_TEST_FILE="+c.TestFile, "BCODE_SV_TEST_LINE="+strconv.Itoa(c.TestLine+1))
	out, err := cmd.CombinedOutput()
	steps := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "step ") {
			steps++
		}
		if strings.HasPrefix(l, "step ") || strings.HasPrefix(l, "note ") {
			t.Log(l)
		}
	}
	if err != nil || !strings.Contains(string(out), "\nok ") || steps < 8 {
		t.Fatalf("the browser session failed after %s (%d steps): %v\n%s", time.Since(start).Round(time.Second), steps, err, out)
	}
	t.Logf("VS Code: the survivor, its problem and its quick fixes in %s", time.Since(start).Round(time.Second))
}

// rustHomeEnv is RUSTUP_HOME and CARGO_HOME of this user, for a session
// whose HOME is not the user's: rustup's cargo proxy finds its toolchain
// through them.
func rustHomeEnv() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	var env []string
	for _, v := range []struct{ key, dir string }{{"RUSTUP_HOME", ".rustup"}, {"CARGO_HOME", ".cargo"}} {
		if os.Getenv(v.key) != "" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(home, v.dir)); err == nil && fi.IsDir() {
			env = append(env, v.key+"="+filepath.Join(home, v.dir))
		}
	}
	return env
}

// TestVSCodeTypeScriptSurvivor: VS Code (code-server) with the extension
// and the real bcode-ls shows a surviving mutant of a .ts file once the
// user's change is saved, with its problem and quick fixes.
func TestVSCodeTypeScriptSurvivor(t *testing.T) {
	vscodeSurvivor(t, typeScriptCase(t))
}

// TestVSCodeRustSurvivor: the same for a .rs file of a cargo crate.
func TestVSCodeRustSurvivor(t *testing.T) {
	vscodeSurvivor(t, rustCase(t))
}
