package editorstest

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// vscodeDir is vscode-extension/ with its dependencies installed, or a
// skip saying how to install them.
func vscodeDir(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("node")
	need(t, err == nil, "node", "install Node.js 20 (apt-get install nodejs npm)")
	dir := filepath.Join(repoRoot(t), "vscode-extension")
	_, err = os.Stat(filepath.Join(dir, "node_modules", "vscode-languageclient"))
	need(t, err == nil, "vscode-extension/node_modules", "run `npm ci` in vscode-extension/")
	return dir
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestVSCodeExtension runs the extension's node --test suites: its own
// logic on a vscode stub, and its protocol layer against the real bcode-ls
// on the fixture repository.
func TestVSCodeExtension(t *testing.T) {
	dir := vscodeDir(t)
	ls := bcodeLS(t)
	f := NewFixture(t)
	run(t, dir, nil, "node", filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".")
	env := append(f.Env(ls), "BCODE_APPEND_EVENT_CMD="+appendEventCommand(t))
	out := run(t, dir, env, "node", "--test", "--require", "./test-support/register-vscode-stub.js", "test/")
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "# ") && !strings.HasPrefix(l, "# Subtest") {
			t.Log(strings.TrimPrefix(l, "# "))
		}
	}
	if !strings.Contains(out, "# fail 0") || strings.Contains(out, "# pass 0") || !strings.Contains(out, "ok ") {
		t.Fatalf("node --test did not pass cleanly:\n%s", out)
	}
	if strings.Contains(out, "# skipped 0") == false {
		t.Fatalf("a node test skipped although bcode-ls and the fixture were given:\n%s", out)
	}
}

// TestVSCodePackage builds the .vsix with esbuild and vsce and checks what
// VS Code will read from it: the manifest fields and the bundled main.
func TestVSCodePackage(t *testing.T) {
	dir := vscodeDir(t)
	run(t, dir, nil, "npm", "run", "-s", "package")
	vsix := filepath.Join(dir, "bcode.vsix")
	zr, err := zip.OpenReader(vsix)
	if err != nil {
		t.Fatalf("the .vsix is not a zip: %v", err)
	}
	defer zr.Close()
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = b
		if strings.Contains(f.Name, "node_modules/") || strings.HasPrefix(f.Name, "extension/src/") || strings.HasPrefix(f.Name, "extension/test") {
			t.Errorf("the .vsix carries %s: only the bundle belongs in it", f.Name)
		}
	}
	var pkg struct {
		Name, Publisher, Version, Main, Icon string
		Engines                              map[string]string
		ActivationEvents                     []string
		Capabilities                         struct {
			UntrustedWorkspaces struct{ Supported bool } `json:"untrustedWorkspaces"`
		}
		Contributes struct {
			ViewsContainers map[string][]struct{ ID string } `json:"viewsContainers"`
			Views           map[string][]struct{ ID string }
			Commands        []struct{ Command string }
			Menus           map[string][]struct{ Command, When, Group string }
			Configuration   struct {
				Properties map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(files["extension/package.json"], &pkg); err != nil {
		t.Fatalf("extension/package.json: %v", err)
	}
	if pkg.Name != "bcode" || pkg.Publisher != "bcode-dev" || pkg.Version == "" {
		t.Errorf("identity %s.%s@%s", pkg.Publisher, pkg.Name, pkg.Version)
	}
	if pkg.Engines["vscode"] != "^1.91.0" {
		t.Errorf("engines.vscode = %q, want ^1.91.0", pkg.Engines["vscode"])
	}
	if pkg.Icon == "" || len(files["extension/"+pkg.Icon]) == 0 {
		t.Errorf("icon %q is not in the .vsix", pkg.Icon)
	}
	if pkg.Capabilities.UntrustedWorkspaces.Supported {
		t.Error("capabilities.untrustedWorkspaces.supported is true, but bcode-ls runs the workspace's tests")
	}
	for _, e := range pkg.ActivationEvents {
		if e == "*" || e == "workspaceContains:.git" || e == "onStartupFinished" {
			t.Errorf("activation event %q starts bcode in workspaces it does not apply to", e)
		}
	}
	if pkg.Main != "./dist/extension.js" {
		t.Errorf("main = %q", pkg.Main)
	}
	main := files["extension/dist/extension.js"]
	if len(main) == 0 {
		t.Fatal("the bundled main extension/dist/extension.js is not in the .vsix")
	}
	for _, want := range []string{"bcode/taskChanged", "bcode/taskDiff", "bcode-taskdiff", "bcode.tasks.accept", "--stdio", "workspace/textDocumentContent"} {
		if !bytes.Contains(main, []byte(want)) {
			t.Errorf("the bundle lacks %q: vscode-languageclient or the extension is not bundled", want)
		}
	}
	if bytes.Contains(main, []byte(`require("vscode-languageclient`)) {
		t.Error("the bundle requires vscode-languageclient at run time instead of bundling it")
	}
	if c := pkg.Contributes.ViewsContainers["activitybar"]; len(c) != 1 || c[0].ID != "bcode" {
		t.Errorf("activity-bar container: %+v", c)
	}
	if v := pkg.Contributes.Views["bcode"]; len(v) != 1 || v[0].ID != "bcode.tasks" {
		t.Errorf("views: %+v", v)
	}
	if _, ok := pkg.Contributes.Configuration.Properties["bcode.serverPath"]; !ok {
		t.Error("no bcode.serverPath setting")
	}
	accept := false
	for _, m := range pkg.Contributes.Menus["view/item/context"] {
		if m.Command == "bcode.tasks.accept" && strings.HasPrefix(m.Group, "inline") {
			accept = strings.Contains(m.When, `\+accept`)
		}
	}
	if !accept {
		t.Error("no inline Accept gated on the +accept context value")
	}
	var manifest struct {
		Metadata struct {
			Identity struct {
				ID        string `xml:"Id,attr"`
				Publisher string `xml:"Publisher,attr"`
				Version   string `xml:"Version,attr"`
			}
		}
	}
	if err := xml.Unmarshal(files["extension.vsixmanifest"], &manifest); err != nil {
		t.Fatalf("extension.vsixmanifest: %v", err)
	}
	if id := manifest.Metadata.Identity; id.ID != "bcode" || id.Publisher != "bcode-dev" || id.Version != pkg.Version {
		t.Errorf("vsixmanifest identity %+v", id)
	}
	t.Logf("bcode.vsix: %d files, bundle %d KiB", len(files), len(main)/1024)
}
