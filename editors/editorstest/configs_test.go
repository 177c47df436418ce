package editorstest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func readConfig(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "editors", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func strictJSON(t *testing.T, rel string, v any) {
	t.Helper()
	if err := json.Unmarshal(readConfig(t, rel), v); err != nil {
		t.Fatalf("%s is not valid JSON: %v", rel, err)
	}
}

// TestEditorConfigs parses every ready config and checks that it starts
// bcode-ls --stdio for the languages bcode judges (Go, Python, JavaScript,
// TypeScript, Rust): the check for editors Debian does not package (Helix,
// Zed, Sublime, kak-lsp).
func TestEditorConfigs(t *testing.T) {
	wantCmd := []string{"bcode-ls", "--stdio"}
	t.Run("helix", func(t *testing.T) {
		var c struct {
			LanguageServer map[string]struct {
				Command string
				Args    []string
			} `toml:"language-server"`
			Language []struct {
				Name            string
				LanguageServers []string `toml:"language-servers"`
			}
		}
		if err := toml.Unmarshal(readConfig(t, "helix/languages.toml"), &c); err != nil {
			t.Fatalf("languages.toml: %v", err)
		}
		s, ok := c.LanguageServer["bcode-ls"]
		if !ok || !slices.Equal(append([]string{s.Command}, s.Args...), wantCmd) {
			t.Errorf("language-server.bcode-ls = %+v", c.LanguageServer)
		}
		var langs []string
		for _, l := range c.Language {
			if slices.Contains(l.LanguageServers, "bcode-ls") {
				langs = append(langs, l.Name)
			}
		}
		if want := []string{"go", "python", "javascript", "jsx", "typescript", "tsx", "rust"}; !slices.Equal(langs, want) {
			t.Errorf("bcode-ls serves %v, want %v", langs, want)
		}
	})
	t.Run("kakoune", func(t *testing.T) {
		var c struct {
			LanguageServer map[string]struct {
				Filetypes []string
				Roots     []string
				Command   string
				Args      []string
			} `toml:"language_server"`
		}
		if err := toml.Unmarshal(readConfig(t, "kakoune/kak-lsp.toml"), &c); err != nil {
			t.Fatalf("kak-lsp.toml: %v", err)
		}
		s := c.LanguageServer["bcode-ls"]
		if !slices.Equal(append([]string{s.Command}, s.Args...), wantCmd) || !slices.Equal(s.Filetypes, []string{"go", "python", "javascript", "typescript", "rust"}) || !slices.Contains(s.Roots, ".git") {
			t.Errorf("language_server.bcode-ls = %+v", s)
		}
	})
	t.Run("zed", func(t *testing.T) {
		var c struct {
			LSP map[string]struct {
				Binary struct {
					Path      string
					Arguments []string
				}
			}
			Languages map[string]struct {
				LanguageServers []string `json:"language_servers"`
			}
		}
		strictJSON(t, "zed/settings.json", &c)
		b := c.LSP["bcode-ls"].Binary
		if !slices.Equal(append([]string{b.Path}, b.Arguments...), wantCmd) {
			t.Errorf("lsp.bcode-ls.binary = %+v", b)
		}
		for _, l := range []string{"Go", "Python", "JavaScript", "TypeScript", "TSX", "Rust"} {
			if !slices.Contains(c.Languages[l].LanguageServers, "bcode-ls") {
				t.Errorf("%s does not use bcode-ls: %+v", l, c.Languages[l])
			}
		}
	})
	t.Run("sublime", func(t *testing.T) {
		var c struct {
			Clients map[string]struct {
				Enabled  bool
				Command  []string
				Selector string
			}
		}
		strictJSON(t, "sublime/LSP-bcode.sublime-settings", &c)
		s := c.Clients["bcode-ls"]
		if !s.Enabled || !slices.Equal(s.Command, wantCmd) {
			t.Errorf("clients.bcode-ls = %+v", s)
		}
		for _, scope := range []string{"source.go", "source.python", "source.js", "source.ts", "source.tsx", "source.rust"} {
			if !strings.Contains(s.Selector, scope) {
				t.Errorf("clients.bcode-ls.selector %q lacks %s", s.Selector, scope)
			}
		}
	})
	t.Run("neovim 0.11 config", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "nvim-plugin", "lsp", "bcode_ls.lua"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`cmd = { 'bcode-ls', '--stdio' }`, `filetypes = { 'go', 'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact', 'rust' }`, `root_markers = { '.git' }`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("lsp/bcode_ls.lua lacks %s", want)
			}
		}
	})
	for _, ed := range []string{"helix", "emacs", "zed", "sublime", "kakoune"} {
		readme := string(readConfig(t, ed+"/README.md"))
		for _, part := range []string{"**Install:**", "**What works", "cannot show:**"} {
			if !strings.Contains(readme, part) {
				t.Errorf("editors/%s/README.md has no %q section", ed, part)
			}
		}
	}
}

// TestEmacsConfig byte-compiles bcode.el against the installed eglot with
// warnings as errors.
func TestEmacsConfig(t *testing.T) {
	_, err := exec.LookPath("emacs")
	need(t, err == nil, "emacs", "apt-get install emacs-nox elpa-eglot")
	dir := t.TempDir()
	src := readConfig(t, "emacs/bcode.el")
	if err := os.WriteFile(filepath.Join(dir, "bcode.el"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	probe := exec.Command("emacs", "--batch", "--eval", `(princ (if (require 'eglot nil t) "eglot" "none"))`)
	out, _ := probe.CombinedOutput()
	need(t, strings.HasSuffix(strings.TrimSpace(string(out)), "eglot"), "eglot for Emacs", "apt-get install elpa-eglot (Emacs 29+ has it built in)")
	cmd := exec.Command("emacs", "--batch", "-L", dir, "--eval", "(setq byte-compile-error-on-warn t)", "-f", "batch-byte-compile", filepath.Join(dir, "bcode.el"))
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("byte-compiling bcode.el: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bcode.elc")); err != nil {
		t.Fatalf("no bcode.elc: %v\n%s", err, out)
	}
}
