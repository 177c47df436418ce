package codegraph

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestConfineGoMod(t *testing.T) {
	in := []byte(`module example.com/m

go 1.22

require (
	example.com/a v0.0.0
	example.com/b v0.0.0
	example.com/c v0.0.0
	example.com/d v1.0.0
)

replace example.com/a => /home/user/secret

replace example.com/b => ../../outside

replace example.com/c => ./inside/c

replace example.com/d => example.com/fork v1.0.1
`)
	out, n := confineGoMod("go.mod", in)
	if n != 2 {
		t.Errorf("dropped %d replacements, want 2:\n%s", n, out)
	}
	s := string(out)
	for _, gone := range []string{"/home/user/secret", "../../outside"} {
		if strings.Contains(s, gone) {
			t.Errorf("%s kept:\n%s", gone, s)
		}
	}
	for _, kept := range []string{"./inside/c", "example.com/fork v1.0.1"} {
		if !strings.Contains(s, kept) {
			t.Errorf("%s dropped:\n%s", kept, s)
		}
	}
	// A nested module's go.mod may climb to the root, not beyond it.
	if _, n := confineGoMod("sub/go.mod", []byte("module example.com/m/sub\n\nreplace example.com/m => ../\n")); n != 0 {
		t.Errorf("a replacement inside the tree was dropped")
	}
	if _, n := confineGoMod("sub/go.mod", []byte("module example.com/m/sub\n\nreplace example.com/x => ../../\n")); n != 1 {
		t.Errorf("a replacement climbing out of the tree was kept")
	}
}

func TestConfineIncludes(t *testing.T) {
	in := []byte("#include \"textflag.h\"\n#include \"/etc/shadow\"\n  # include <../../../etc/passwd>\n#include \"inner/ok.h\"\nTEXT ·F(SB),0,$0\n")
	out, n := confineIncludes("pkg/f_amd64.s", in)
	if n != 2 {
		t.Errorf("blanked %d includes, want 2:\n%s", n, out)
	}
	s := string(out)
	if strings.Contains(s, "/etc/") || !strings.Contains(s, "textflag.h") || !strings.Contains(s, "inner/ok.h") || !strings.Contains(s, "TEXT") {
		t.Errorf("confined:\n%s", s)
	}
}

// TestIndexNeverSwitchesToolchain: a go.mod asking for a newer Go makes a
// plain go command (GOTOOLCHAIN=auto) download it from the proxy and run
// it. The index runs with GOTOOLCHAIN=local and GOPROXY=off whatever the
// user's environment says: the loopback proxy sees no request.
func TestIndexNeverSwitchesToolchain(t *testing.T) {
	var mu sync.Mutex
	var reqs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()
	t.Setenv("GOPROXY", srv.URL)
	t.Setenv("GOTOOLCHAIN", "auto")
	t.Setenv("GOSUMDB", "off")
	repo := t.TempDir()
	for name, body := range map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.99.0\n\ntoolchain go1.99.0\n",
		"a.go":   "package m\n\nfunc A() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Armed: the plain go command, in the user's environment.
	plain := exec.Command("go", "list", "-m")
	plain.Dir = repo
	plain.CombinedOutput()
	mu.Lock()
	armed := strings.Contains(strings.Join(reqs, " "), "golang.org/toolchain")
	reqs = nil
	mu.Unlock()
	if !armed {
		t.Fatal("control: the plain go command did not ask the proxy for a toolchain")
	}
	if _, _, err := Index(context.Background(), repo, nil); err != nil {
		t.Logf("index: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) > 0 {
		t.Fatalf("the index reached the proxy: %q", reqs)
	}
}
