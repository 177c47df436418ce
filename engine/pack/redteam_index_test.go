//go:build linux

package pack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/internal/testenv"
)

// Red-team tests of the Go index (issue 12, item 2): the agent's worktree
// makes the host's Go tooling read a host file, or eat memory, and the
// index copies what the tool said about it into the pack's notes, so into
// the next attempt's prompt. Each variant first runs the same trick through
// plain go/packages (the user's environment, cgo on, the tree itself) and
// shows it is armed — the host file's marker is in the tool's error text,
// or the memory grows — then builds a pack the way bcode does, in a child
// process whose peak RSS (wait4's rusage: the process and every tool it
// waited for) is measured, and shows no byte of the host file is in the
// pack and the memory stayed bounded.

// identityRedactor redacts nothing: the holds below must not depend on
// redaction catching the marker.
type identityRedactor struct{}

func (identityRedactor) Redact(s string) (string, int) { return s, 0 }

const redteamChildEnv = "BCODE_REDTEAM_PACK_CHILD"

// TestRedTeamPackChild is the child process: it builds a pack of the
// repository named by redteamChildEnv and prints the rendered pack and its
// index errors as JSON. It does nothing in a normal run.
func TestRedTeamPackChild(t *testing.T) {
	repo := os.Getenv(redteamChildEnv)
	if repo == "" {
		t.Skip("child process of the red-team tests only")
	}
	p, err := Build(context.Background(), Input{
		Repo: repo, Goal: "fix the bug", Redactor: identityRedactor{},
		Selection: &engine.Selection{File: "a.go", StartLine: 1, EndLine: 3},
	})
	out := struct {
		Rendered string   `json:"rendered"`
		Errors   []string `json:"errors"`
		Err      string   `json:"err"`
	}{}
	if err != nil {
		out.Err = err.Error()
	} else {
		out.Rendered = Render(p)
		if p.IndexStats != nil {
			out.Errors = p.IndexStats.Errors
		}
	}
	b, _ := json.Marshal(out)
	fmt.Printf("\nREDTEAM %s\n", b)
}

// buildPackInChild builds a pack of repo in a child test process and
// returns everything the pack holds as text and the child's peak RSS.
func buildPackInChild(t *testing.T, repo string) (string, int64, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRedTeamPackChild$", "-test.v")
	cmd.Env = append(os.Environ(), redteamChildEnv+"="+repo)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("child: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	_, js, ok := strings.Cut(stdout.String(), "\nREDTEAM ")
	if !ok {
		t.Fatalf("child printed no result:\n%s", stdout.String())
	}
	var out struct {
		Rendered string   `json:"rendered"`
		Errors   []string `json:"errors"`
		Err      string   `json:"err"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(js, "\n", 2)[0]), &out); err != nil {
		t.Fatal(err)
	}
	if out.Err != "" {
		t.Fatalf("pack: %s", out.Err)
	}
	return out.Rendered + "\n" + strings.Join(out.Errors, "\n"), maxRSS(cmd.ProcessState), took
}

// maxRSS is the peak resident set of a finished process and the children
// it waited for, in bytes.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss) * 1024 // kilobytes on Linux
	}
	return -1
}

func marker(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "HOSTMARK" + strings.ToUpper(hex.EncodeToString(b))
}

// writeTree writes files (slash paths) below dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// plainLoad is the unhardened path: go/packages as the index used it,
// with the user's environment, cgo on, over the tree itself. It returns
// every error text it produced.
func plainLoad(t *testing.T, repo string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pkgs, err := packages.Load(&packages.Config{
		Context: ctx, Dir: repo, Tests: true,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedImports |
			packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo,
		Env: append(os.Environ(), "CGO_ENABLED=1"),
	}, "./...")
	var b strings.Builder
	if err != nil {
		b.WriteString(err.Error())
	}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			b.WriteString(e.Error() + "\n")
		}
	})
	return b.String()
}

// TestRedTeamIndexReadsNoHostFile: five ways the worktree points the Go
// tooling at a host file. Armed on the plain path, held by bcode's.
func TestRedTeamIndexReadsNoHostFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the red-team suite runs on Linux")
	}
	testenv.Command(t, "gcc", "the cgo controls need it: apt-get install gcc")
	good := "package m\n\n// Hello is fine.\nfunc Hello() string { return \"hi\" }\n"
	cases := []struct {
		name  string
		plant func(t *testing.T, repo, host, mark string)
	}{
		{"cgo include of a host file", func(t *testing.T, repo, host, mark string) {
			writeTree(t, repo, map[string]string{"c.go": "package m\n\n// #include \"" + host + "\"\nimport \"C\"\n\nvar _ = C.int(0)\n"})
		}},
		{"go file that is a link to a host file", func(t *testing.T, repo, host, mark string) {
			if err := os.Symlink(host, filepath.Join(repo, "z.go")); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory link to a host package", func(t *testing.T, repo, host, mark string) {
			dir := filepath.Join(filepath.Dir(host), "hostpkg")
			writeTree(t, dir, map[string]string{"h.go": "package hostpkg\n\n" + mark + " is not Go\n"})
			if err := os.Symlink(dir, filepath.Join(repo, "sub")); err != nil {
				t.Fatal(err)
			}
			writeTree(t, repo, map[string]string{"b.go": "package m\n\nimport _ \"example.com/m/sub\"\n"})
		}},
		{"assembler include of a host file", func(t *testing.T, repo, host, mark string) {
			writeTree(t, repo, map[string]string{
				"f.go":      "package m\n\nfunc F() int\n",
				"f_amd64.s": "#include \"" + host + "\"\n\nTEXT ·F(SB),0,$0-8\n\tRET\n",
				"f_arm64.s": "#include \"" + host + "\"\n\nTEXT ·F(SB),0,$0-8\n\tRET\n",
			})
		}},
		{"go.mod replace naming a host directory", func(t *testing.T, repo, host, mark string) {
			dir := filepath.Join(filepath.Dir(host), "hostmod")
			writeTree(t, dir, map[string]string{
				"go.mod": "module example.com/h\n\ngo 1.22\n",
				"h.go":   "package h\n\n" + mark + " is not Go\n",
			})
			writeTree(t, repo, map[string]string{
				"go.mod": "module example.com/m\n\ngo 1.22\n\nrequire example.com/h v0.0.0\n\nreplace example.com/h => " + dir + "\n",
				"b.go":   "package m\n\nimport _ \"example.com/h\"\n",
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mark := marker(t)
			hostDir := t.TempDir()
			host := filepath.Join(hostDir, "secret.txt")
			if err := os.WriteFile(host, []byte(mark+" is a secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			repo := t.TempDir()
			writeTree(t, repo, map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "a.go": good})
			c.plant(t, repo, host, mark)

			start := time.Now()
			plain := plainLoad(t, repo)
			if !strings.Contains(plain, mark) {
				t.Fatalf("control: the plain path did not carry the host file's marker, so the attack is not armed:\n%s", plain)
			}
			t.Logf("armed: plain go/packages copied the host file into its errors (%.1fs)", time.Since(start).Seconds())

			text, rss, took := buildPackInChild(t, repo)
			if strings.Contains(text, mark) {
				t.Fatalf("held? no: the pack carries the host file's marker:\n%s", text)
			}
			if !strings.Contains(text, "Hello") {
				t.Errorf("the pack lost the tree's own code:\n%s", text)
			}
			t.Logf("held: no host byte in the pack; pack built in %.1fs, peak RSS %d MiB", took.Seconds(), rss>>20)
		})
	}
}

// TestRedTeamIndexDevZero: a cgo `#include "/dev/zero"` makes the C
// preprocessor read forever. Armed: the plain path (cgo on) under a 2 GiB
// address-space cap and a 90 s timeout grows until the cap stops it. Held:
// bcode's pack never starts a C compiler and stays small.
func TestRedTeamIndexDevZero(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the red-team suite runs on Linux")
	}
	for _, tool := range []string{"gcc", "prlimit"} {
		testenv.Command(t, tool, "apt-get install gcc util-linux")
	}
	repo := t.TempDir()
	writeTree(t, repo, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"a.go":   "package m\n\n// Hello is fine.\nfunc Hello() string { return \"hi\" }\n",
		"c.go":   "package m\n\n// #include \"/dev/zero\"\nimport \"C\"\n\nvar _ = C.int(0)\n",
	})
	// Large enough that the Go programs of the chain (go, cgo) fit their
	// address-space reservations; the C compiler reading /dev/zero grows
	// to the cap whatever it is.
	const capBytes = 2 << 30
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// What go/packages runs, with the user's environment and cgo on; the
	// cap is inherited by the C compiler and keeps the machine safe.
	// Warm the build cache first: on a cold cache (a fresh CI machine) the
	// go command compiles runtime/cgo and friends itself, and its own
	// threads can exhaust the address-space cap before the C compiler
	// ever reads /dev/zero, which would leave the control unarmed for a
	// reason that has nothing to do with the attack.
	warm := exec.CommandContext(ctx, "go", "build", "runtime/cgo", "net", "os/user")
	warm.Dir = repo
	warm.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("warming the build cache: %v\n%s", err, out)
	}
	// A Go program of the chain (go, cgo) can die of its own address-space
	// reservation before the C compiler starts: that run proves nothing
	// either way, so it is tried again, up to three times.
	var out []byte
	var controlRSS int64
	for try := 1; try <= 3; try++ {
		cmd := exec.CommandContext(ctx, "prlimit", fmt.Sprintf("--as=%d", capBytes), "--",
			"go", "list", "-e", "-json", "-compiled", "-export", "-test", ".")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOMAXPROCS=2")
		start := time.Now()
		out, _ = cmd.CombinedOutput()
		controlRSS = maxRSS(cmd.ProcessState)
		t.Logf("control, try %d: plain go list with cgo: peak RSS %d MiB in %.1fs (cap %d MiB)", try, controlRSS>>20, time.Since(start).Seconds(), capBytes>>20)
		if controlRSS >= 400<<20 {
			break
		}
	}
	if controlRSS < 400<<20 {
		t.Fatalf("control: the plain path peaked at %d MiB, so the attack is not armed:\n%.2000s", controlRSS>>20, out)
	}

	text, rss, took := buildPackInChild(t, repo)
	if rss > 300<<20 {
		t.Errorf("held? no: building the pack peaked at %d MiB", rss>>20)
	}
	if !strings.Contains(text, "Hello") {
		t.Errorf("the pack lost the tree's own code:\n%s", text)
	}
	t.Logf("held: pack built in %.1fs, peak RSS %d MiB (bcode and every tool it started)", took.Seconds(), rss>>20)
}
