package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/gateway/wire"
)

func TestEscalationPolicy(t *testing.T) {
	ok := &gateway.Approval{TaskID: "t1", By: "user", At: time.Now()}
	cases := []struct {
		name string
		p    gateway.EscalationPolicy
		r    gateway.EscalationRequest
		want string // "" allowed, else part of the refusal
	}{
		{"off by default", gateway.EscalationPolicy{}, gateway.EscalationRequest{Trigger: gateway.TriggerUserRequest, Approval: ok}, "escalation is off"},
		{"user request approved", gateway.EscalationPolicy{Enabled: true}, gateway.EscalationRequest{Trigger: gateway.TriggerUserRequest, Approval: ok}, ""},
		{"no approval", gateway.EscalationPolicy{Enabled: true}, gateway.EscalationRequest{Trigger: gateway.TriggerUserRequest}, "not approved"},
		{"approval of another task", gateway.EscalationPolicy{Enabled: true}, gateway.EscalationRequest{Trigger: gateway.TriggerUserRequest, Approval: &gateway.Approval{TaskID: "t2", By: "u", At: time.Now()}}, "for task"},
		{"failure not a trigger", gateway.EscalationPolicy{Enabled: true}, gateway.EscalationRequest{Trigger: gateway.TriggerRepeatedFailure, FailedAttempts: 9, Approval: ok}, "only on the user's request"},
		{"too few failures", gateway.EscalationPolicy{Enabled: true, AfterFailedAttempts: 2}, gateway.EscalationRequest{Trigger: gateway.TriggerRepeatedFailure, FailedAttempts: 1, Approval: ok}, "escalates after 2"},
		{"repeated failure approved", gateway.EscalationPolicy{Enabled: true, AfterFailedAttempts: 2}, gateway.EscalationRequest{Trigger: gateway.TriggerRepeatedFailure, FailedAttempts: 2, Approval: ok}, ""},
		{"unknown trigger", gateway.EscalationPolicy{Enabled: true}, gateway.EscalationRequest{Trigger: "bored", Approval: ok}, "unknown trigger"},
	}
	for _, c := range cases {
		err := c.p.Allow(c.r, "t1")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, gateway.ErrEscalationRefused) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want a refusal with %q", c.name, err, c.want)
		}
	}
}

// anthropicStub records what an Anthropic Messages endpoint receives and
// answers with a tool_use, then text.
type anthropicStub struct {
	mu     sync.Mutex
	bodies []string
	keys   []string
}

func (s *anthropicStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	s.keys = append(s.keys, r.Header.Get("x-api-key"))
	n := len(s.bodies)
	s.mu.Unlock()
	if r.URL.Path != "/v1/messages" || r.Header.Get("anthropic-version") == "" {
		w.WriteHeader(404)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if n == 1 {
		io.WriteString(w, `{"model":"frontier-1","stop_reason":"tool_use","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"terminal","input":{"command":"go test ./..."}}],"usage":{"input_tokens":1200,"output_tokens":40}}`)
		return
	}
	io.WriteString(w, `{"model":"frontier-1","stop_reason":"end_turn","content":[{"type":"text","text":"All green."}],"usage":{"input_tokens":1300,"output_tokens":5}}`)
}

// TestEscalatedSessionGoesToTheFrontierRedacted: an approved escalation
// sends the session to the Anthropic endpoint; the packet has the key only
// in its header, no host path and no canary; the escalation is recorded.
func TestEscalatedSessionGoesToTheFrontierRedacted(t *testing.T) {
	f := newFixture(t)
	stub := &anthropicStub{}
	hs := httptest.NewServer(stub)
	defer hs.Close()
	local := modeltest.New(modeltest.Options{Tools: true})
	defer local.Close()
	key := "sk-ant-" + "api03-abcdefghijklmnopqrstuvwxyz0123456789"
	g := newGateway(local, f, false)
	g.Frontier = &gateway.Frontier{Backend: &gateway.AnthropicBackend{BaseURL: hs.URL, APIKey: key, ModelName: "frontier-1"},
		Policy: gateway.EscalationPolicy{Enabled: true}, ContextTokens: 200000}
	hostDir := t.TempDir()
	canary := "bcode-canary-" + "0011223344556677"
	r, _ := gateway.NewRedactor([]string{canary, key}, []gateway.HostPath{{Path: hostDir, Placeholder: "$WORKTREE"}})
	spec := f.spec(t, r)

	// Without approval nothing opens.
	spec.Escalate = &gateway.EscalationRequest{Trigger: gateway.TriggerUserRequest}
	if _, err := g.Open(context.Background(), spec); !errors.Is(err, gateway.ErrEscalationRefused) {
		t.Fatalf("unapproved escalation: %v", err)
	}
	spec.Escalate.Approval = &gateway.Approval{TaskID: f.lease.TaskID, Endpoint: hs.URL, By: "test-user", At: time.Now()}
	sess, err := g.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	a := serve(t, sess)
	a.init()
	res, err := a.chat(base()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Name != "terminal" || res.Message.ToolCalls[0].Error != "" || res.Message.Content != "Checking." {
		t.Fatalf("reply %+v", res.Message)
	}
	out := "FAIL in " + hostDir + "/sum_test.go; canary " + canary
	id := res.Message.ToolCalls[0].ID
	a.observe(id, "terminal", out)
	if _, err := a.chat(append(base(), res.Message, wire.ChatMessage{Role: "tool", ToolCallID: id, Content: out})...); err != nil {
		t.Fatal(err)
	}
	a.close()
	if len(local.Requests()) != 0 {
		t.Error("the local model was called during an escalated session")
	}
	for i, b := range stub.bodies {
		for _, s := range []string{hostDir, canary, key} {
			if strings.Contains(b, s) {
				t.Errorf("request %d carries %q", i, s)
			}
		}
		if stub.keys[i] != key {
			t.Errorf("request %d: the key was not sent in its header", i)
		}
	}
	var second struct {
		System   string `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal([]byte(stub.bodies[1]), &second)
	if second.System == "" || len(second.Messages) != 3 || second.Messages[2].Content[0].Type != "tool_result" || second.Messages[2].Content[0].ToolUseID != "toolu_1" {
		t.Errorf("anthropic packet: %s", stub.bodies[1])
	}
	evs := f.events(t, gateway.EventEscalated)
	if len(evs) != 1 || !strings.Contains(string(evs[0].Data), "test-user") {
		t.Errorf("escalation events %+v", evs)
	}
	calls, _ := f.led.ModelCalls(context.Background(), f.lease.TaskID)
	if len(calls) != 2 || calls[0].Endpoint != hs.URL || calls[0].PromptTokens != 1200 {
		t.Errorf("model calls %+v", calls)
	}
}

func ev(kind engine.EventKind, attempt int64, data string) engine.Event {
	return engine.Event{Kind: kind, Attempt: attempt, Data: json.RawMessage(data)}
}

func TestReplayRejectsBrokenLogs(t *testing.T) {
	act := ev(gateway.EventAction, 1, `{"turn":1,"calls":[{"id":"a","name":"terminal","arguments":{"command":"ls"}}],"prompt_tokens":10,"completion_tokens":2}`)
	obs := ev(gateway.EventObservation, 1, `{"turn":1,"call_id":"a","tool":"terminal","output":"x"}`)
	cases := map[string][]engine.Event{
		"observation without action": {obs},
		"second observation":         {act, obs, obs},
		"duplicate call id":          {act, obs, act},
		"bad json":                   {ev(gateway.EventAction, 1, `{`)},
	}
	for name, evs := range cases {
		if _, err := gateway.Replay(evs); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	tr, err := gateway.Replay([]engine.Event{act, obs, ev(gateway.EventAction, 2, `{"turn":1}`)}, 1)
	if err != nil || tr.Turns != 1 || tr.Tokens != 12 || len(tr.Messages) != 2 || tr.Messages[1].Content != "x" {
		t.Errorf("filtered replay: %+v %v", tr, err)
	}
}
