package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/gateway/redacttest"
	"github.com/bcode-dev/bcode/verify/secrets"
)

// TestOutboundAttackSuite runs the boundary's attack suite against the
// choke point as the product uses it: a request posted through a guarded
// client (outboundTransport under it, the session's Redactor in the
// request's context) to the scripted model server, which records every
// byte it receives.
func TestOutboundAttackSuite(t *testing.T) {
	srv := modeltest.New(modeltest.Options{Tools: true})
	defer srv.Close()
	res := redacttest.Run(t, redacttest.Boundary{New: func(t *testing.T, known []string) func([]byte) ([]byte, error) {
		red, err := NewRedactor(known, nil)
		if err != nil {
			t.Fatal(err)
		}
		client := guardClient(nil, 0)
		return func(body []byte) ([]byte, error) {
			before := len(srv.Requests())
			ctx, _ := withGuard(context.Background(), red)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			rs := srv.Requests()
			if len(rs) == before {
				return nil, err
			}
			return rs[len(rs)-1].Body, err
		}
	}})
	if res.Held != res.Attacks || res.Attacks < 500 {
		t.Errorf("%d of %d attacks held", res.Held, res.Attacks)
	}
}

// TestUnguardedRequestRefused: a request with a body and no session's
// redactor never leaves.
func TestUnguardedRequestRefused(t *testing.T) {
	srv := modeltest.New(modeltest.Options{Tools: true})
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader([]byte(`{"messages":[]}`)))
	_, err := guardClient(nil, 0).Do(req)
	if !errors.Is(err, ErrUnguarded) || len(srv.Requests()) != 0 {
		t.Errorf("unguarded request: %v, %d received", err, len(srv.Requests()))
	}
}

// conversation is a chat request body of turns turns (a command and its
// failing test output, about 2 KiB each); tag makes the last turn's text
// unique.
func conversation(turns int, tag string) []byte {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix Sum."}}
	for i := range turns {
		id := fmt.Sprintf("call_%d_0", i)
		out := strings.Repeat(fmt.Sprintf("--- FAIL: TestSum%d (0.00s)\n    sum_test.go:12: Sum([1 2 3]) = 5, want 6\n", i), 25)
		if i == turns-1 {
			out += tag
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "terminal", "arguments": `{"command":"go test ./... 2>&1"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": out})
	}
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	return body
}

func benchRedactor(b *testing.B) *Redactor {
	canary, _ := secrets.NewCanary()
	red, err := NewRedactor([]string{canary, "s3cr3t-env-value-41d8"}, []HostPath{{Path: "/home/alice/work/repo", Placeholder: "$WORKTREE"}})
	if err != nil {
		b.Fatal(err)
	}
	return red
}

// BenchmarkRedactRequestCold is the choke point's cost on a conversation
// of 40 turns (~90 KiB) seen for the first time (a resumed attempt's first
// call). Run it alone: the number is a benchmark, not an assertion.
func BenchmarkRedactRequestCold(b *testing.B) {
	body := conversation(40, "")
	b.SetBytes(int64(len(body)))
	for range b.N {
		red := benchRedactor(b)
		if _, _, err := red.RedactRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedactRequestNextTurn is its cost on the call after that: the
// same conversation and one new turn (the common case).
func BenchmarkRedactRequestNextTurn(b *testing.B) {
	red := benchRedactor(b)
	if _, _, err := red.RedactRequest(conversation(40, "")); err != nil {
		b.Fatal(err)
	}
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = conversation(41, fmt.Sprintf("run %d", i))
	}
	b.SetBytes(int64(len(bodies[0])))
	b.ResetTimer()
	for i := range b.N {
		if _, _, err := red.RedactRequest(bodies[i]); err != nil {
			b.Fatal(err)
		}
	}
}
