package server_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/server"
	"github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

// Red-team test of bcode-ls's reads (issue 12, item 8): the agent leaves a
// 2 GiB file in the workspace, and the user asks for a code action or a
// context pack on it without opening it. The server read the whole file.

const readChildEnv = "BCODE_REDTEAM_READ_CHILD"

// TestRedTeamReadChild is the control's child: the plain path, a whole-file
// read, of the file named by readChildEnv. It does nothing in a normal run.
func TestRedTeamReadChild(t *testing.T) {
	p := os.Getenv(readChildEnv)
	if p == "" {
		t.Skip("child process of the red-team test only")
	}
	b, err := os.ReadFile(p)
	fmt.Println("read", len(b), err)
}

// vmHWM is this process's peak resident set so far (Linux).
func vmHWM(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// TestRedTeamBigUnopenedFile: armed — the plain read of the 2 GiB sparse
// file, in a child process capped at 1 GiB of address space, dies trying to
// hold it all. Held — a code action, a pack preview, a context pack and a
// task selection on it answer at once (the pack with a message naming the
// limit), and the server's peak RSS stays far below the file's size.
func TestRedTeamBigUnopenedFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("measures /proc/self/status")
	}
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("needs prlimit (util-linux) for the control")
	}
	if raceEnabled {
		t.Skip("the control runs under a 1 GiB address-space cap, which the race detector's shadow memory does not fit (the test runs without -race)")
	}
	e, ctx := setup(t, "boundary.txtar", server.Options{})
	const size = 2 << 30
	big := filepath.Join(e.Dir, "price", "huge.go")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("package price\n")
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()

	cmd := exec.Command("prlimit", fmt.Sprintf("--as=%d", 1<<30), "--", os.Args[0], "-test.run=^TestRedTeamReadChild$", "-test.v")
	cmd.Env = append(os.Environ(), readChildEnv+"="+big)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmdErr := cmd.Run()
	if cmdErr == nil && strings.Contains(out.String(), fmt.Sprintf("read %d <nil>", size)) {
		t.Fatalf("control: the capped child read the whole file, so the cap does not show the attack:\n%s", out.String())
	}
	if cmdErr == nil || !strings.Contains(out.String(), "out of memory") {
		t.Fatalf("control: the plain read did not run out of memory under the 1 GiB cap (%v):\n%.2000s", cmdErr, out.String())
	}
	t.Logf("armed: a plain whole-file read of the 2 GiB file ran out of memory under a 1 GiB cap")

	before := vmHWM(t)
	start := time.Now()
	sel := lsp.Range{Start: lsp.Position{Line: 0}, End: lsp.Position{Line: 3}}
	var actions []lsp.CodeAction
	if err := e.Conn.Call(ctx, "textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": e.URI("price/huge.go")}, "range": sel, "context": map[string]any{"diagnostics": []any{}},
	}, &actions); err != nil {
		t.Fatalf("code action: %v", err)
	}
	var doc command.DocumentResult
	err = e.Execute(ctx, command.New("", command.PackPreview, command.PackArgs{URI: e.URI("price/huge.go"), Range: &sel}), &doc)
	var le *lsp.Error
	if !errors.As(err, &le) || !strings.Contains(le.Message, "4 MiB limit") {
		t.Errorf("pack preview of the big file: %v, want an error naming the 4 MiB limit", err)
	}
	var sum server.PackSummary
	if err := e.Conn.Call(ctx, server.MethodContextPack, command.PackArgs{URI: e.URI("price/price.go"), Range: &sel, Budget: 2000}, &sum); err != nil {
		t.Errorf("a pack of another file in the same package: %v", err)
	}
	took := time.Since(start)
	after := vmHWM(t)
	t.Logf("held: code action, pack preview and pack in %.1fs; server process peak RSS %d MiB before, %d MiB after (file %d MiB)", took.Seconds(), before>>20, after>>20, size>>20)
	if after > 1<<30 {
		t.Errorf("peak RSS %d MiB: the server read the file", after>>20)
	}
}
