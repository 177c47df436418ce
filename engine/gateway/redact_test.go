package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/gateway"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/gateway/wire"
	"github.com/bcode-dev/bcode/verify/secrets"
)

func spaced(s, sep string) string { return strings.Join(strings.Split(s, ""), sep) }

func reversed(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func b64At(k int, s string) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat("~", k) + s))
}

// requestStrings are every string in a JSON request body, decoded (so a
// secret JSON-escaped in the body is seen as itself).
func requestStrings(t *testing.T, body []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("request body: %v", err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestEncodedLeaksDoNotReachTheModel: a tool observation holds the
// attempt's canary, an environment secret and the host's paths (home,
// worktree, state dir, ledger file) in the forms of issue 12 item 5. With
// a redactor that does not know them (the control) they all reach the
// scripted model server; with the session's redactor none does.
func TestEncodedLeaksDoNotReachTheModel(t *testing.T) {
	canary, err := secrets.NewCanary()
	if err != nil {
		t.Fatal(err)
	}
	core, _ := secrets.CanaryCore(canary)
	envSecret := "correct-horse-" + "battery-staple-41d8"
	home, state := t.TempDir(), t.TempDir()
	ledgerPath := filepath.Join(state, "ledger.db")
	worktree := filepath.Join(state, "worktrees", "T1-f1")
	if err := os.MkdirAll(worktree, 0o755); err != nil {
		t.Fatal(err)
	}
	leaks := map[string]string{
		"core alone":                 core,
		"canary upper-cased":         strings.ToUpper(canary),
		"core reversed":              reversed(core),
		"canary folded across lines": canary[:10] + "\n" + canary[10:20] + "\n" + canary[20:],
		"canary spaced":              spaced(canary, " "),
		"canary with U+2060":         spaced(canary, "\u2060"),
		"canary fullwidth":           strings.Map(func(r rune) rune { return r - '!' + '！' }, canary),
		"canary base64 at offset 1":  b64At(1, canary),
		"canary base64 at offset 2":  b64At(2, canary),
		"core hex":                   hex.EncodeToString([]byte(core)),
		"env value upper-cased":      strings.ToUpper(envSecret),
		"env value reversed":         reversed(envSecret),
		"home in base64 at offset 1": b64At(1, home),
		"worktree base64":            b64At(0, worktree+"/go.mod"),
		"state dir base64, offset 2": b64At(2, state),
		"ledger path hex":            hex.EncodeToString([]byte(ledgerPath)),
		"ledger path with U+2060":    spaced(ledgerPath, "\u2060"),
		"home upper-cased":           strings.ToUpper(home),
	}
	var obs strings.Builder
	for name, leak := range leaks {
		obs.WriteString(name + ": " + leak + "\n")
	}
	paths := append([]gateway.HostPath{{Path: home, Placeholder: "$HOME"}, {Path: worktree, Placeholder: "$WORKTREE"}},
		gateway.StateHostPaths(state, ledgerPath)...)
	hardened, err := gateway.NewRedactor(append([]string{canary}, gateway.SecretsFromEnv([]string{"DEPLOY_TOKEN=" + envSecret})...), paths)
	if err != nil {
		t.Fatal(err)
	}
	unaware, err := gateway.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	// run sends the observation through a real session to the scripted
	// model server and returns the strings of the request that carried it.
	run := func(r *gateway.Redactor) []string {
		f := newFixture(t)
		srv := modeltest.New(modeltest.Options{Tools: true},
			modeltest.Step{ToolCalls: []modeltest.Call{{Name: "terminal", Arguments: `{"command":"./leak.sh"}`}}},
			modeltest.Step{ToolCalls: []modeltest.Call{{Name: "finish", Arguments: `{"summary":"ok"}`}}})
		defer srv.Close()
		sess, err := newGateway(srv, f, false).Open(context.Background(), f.spec(t, r))
		if err != nil {
			t.Fatal(err)
		}
		a := serve(t, sess)
		a.init()
		res, err := a.chat(base()...)
		if err != nil {
			t.Fatal(err)
		}
		id := res.Message.ToolCalls[0].ID
		a.observe(id, "terminal", obs.String())
		if _, err := a.chat(append(base(), res.Message, wire.ChatMessage{Role: "tool", ToolCallID: id, Content: obs.String()})...); err != nil {
			t.Fatal(err)
		}
		a.close()
		reqs := srv.Requests()
		if len(reqs) < 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		return append(requestStrings(t, reqs[1].Body), string(reqs[1].Body))
	}
	contains := func(strs []string, s string) bool {
		for _, x := range strs {
			if strings.Contains(x, s) {
				return true
			}
		}
		return false
	}

	control := run(unaware)
	for name, leak := range leaks {
		if visible, _ := secrets.StripInvisible(leak); !contains(control, visible) {
			t.Errorf("control: %s did not reach the model even unredacted; the case proves nothing", name)
		}
	}
	sent := run(hardened)
	held := 0
	for name, leak := range leaks {
		visible, _ := secrets.StripInvisible(leak)
		if contains(sent, leak) || contains(sent, visible) {
			t.Errorf("%s reached the model", name)
			continue
		}
		if !contains(sent, name+": ") {
			t.Errorf("the line of %s is gone, not redacted", name)
			continue
		}
		held++
	}
	t.Logf("%d encoded leaks sent through a session: %d reached the model unredacted, %d held", len(leaks), len(leaks), held)
}

// TestStateHostPaths: the state dir and the ledger file are placeholders
// when written plainly.
func TestStateHostPaths(t *testing.T) {
	state := t.TempDir()
	ledgerPath := filepath.Join(state, "ledger.db")
	r, err := gateway.NewRedactor(nil, gateway.StateHostPaths(state, ledgerPath))
	if err != nil {
		t.Fatal(err)
	}
	out, n := r.Redact("sqlite3 " + ledgerPath + "; ls " + state + "/logs")
	if out != "sqlite3 $BCODE_STATE/ledger.db; ls $BCODE_STATE/logs" || n != 2 {
		t.Fatalf("Redact = %q, %d", out, n)
	}
}
