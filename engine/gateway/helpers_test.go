package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway"
	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/gateway/openai"
	"github.com/bcode-dev/bcode/engine/gateway/wire"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// fixture is a real ledger file with a leased task and a running attempt.
type fixture struct {
	led     *ledger.Ledger
	lease   engine.Lease
	attempt *engine.Attempt
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	task := &engine.Task{Repo: t.TempDir(), Goal: "fix Sum", Base: "HEAD"}
	if err := led.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	lease, _, err := led.Acquire(ctx, task.ID, ledger.LocalHolder(""), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, err := led.StartAttempt(ctx, lease, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{led: led, lease: lease, attempt: a}
}

func (f *fixture) events(t *testing.T, kind engine.EventKind) []engine.Event {
	t.Helper()
	evs, err := f.led.Events(context.Background(), f.lease.TaskID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []engine.Event
	for _, e := range evs {
		if kind == "" || e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func newGateway(srv *modeltest.Server, f *fixture, stream bool) *gateway.Gateway {
	c := openai.New(srv.URL, "")
	return &gateway.Gateway{
		Backend: &gateway.OpenAIBackend{Client: c, ModelName: "scripted", Stream: stream},
		Probe:   c,
		Ledger:  f.led,
	}
}

func newRedactor(t *testing.T, known ...string) *gateway.Redactor {
	t.Helper()
	r, err := gateway.NewRedactor(known, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) spec(t *testing.T, r *gateway.Redactor) gateway.SessionSpec {
	if r == nil {
		r = newRedactor(t)
	}
	return gateway.SessionSpec{Lease: f.lease, Attempt: f.attempt.ID, Task: "Fix Sum in sum.go.",
		Budgets: engine.Budgets{MaxTurns: 20, MaxTokens: 1 << 20}, Redactor: r}
}

// testAgent plays the agent's side of the wire in-process.
type testAgent struct {
	t    *testing.T
	conn *wire.Conn
	done chan struct{}
	out  gateway.Outcome
	err  error
	in   io.Closer
}

var testTools = []wire.Tool{
	{Name: "terminal", Description: "Run bash.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`)},
	{Name: "finish", Description: "Done.", Parameters: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`)},
}

// serve starts sess on in-memory pipes and returns the agent end.
func serve(t *testing.T, sess *gateway.Session) *testAgent {
	t.Helper()
	agentR, gwW := io.Pipe()
	gwR, agentW := io.Pipe()
	ta := &testAgent{t: t, conn: wire.NewConn(agentR, agentW), done: make(chan struct{}), in: agentW}
	go func() {
		ta.out, ta.err = sess.Serve(context.Background(), gwR, gwW)
		gwW.Close()
		gwR.Close() // the agent's next write fails, as a killed peer's would
		close(ta.done)
	}()
	return ta
}

func (a *testAgent) init() wire.InitializeResult {
	a.t.Helper()
	var res wire.InitializeResult
	if err := a.conn.Call(context.Background(), wire.MethodInitialize, wire.InitializeParams{ProtocolVersion: wire.ProtocolVersion, Agent: "test", Tools: testTools}, &res); err != nil {
		a.t.Fatal(err)
	}
	return res
}

func (a *testAgent) chat(msgs ...wire.ChatMessage) (*wire.ChatResult, error) {
	var res wire.ChatResult
	err := a.conn.Call(context.Background(), wire.MethodChat, wire.ChatParams{Messages: msgs}, &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func (a *testAgent) observe(id, tool, out string) wire.ObserveResult {
	a.t.Helper()
	var res wire.ObserveResult
	if err := a.conn.Call(context.Background(), wire.MethodObserve, wire.ObserveParams{CallID: id, Tool: tool, Output: out}, &res); err != nil {
		a.t.Fatal(err)
	}
	return res
}

func (a *testAgent) close() gateway.Outcome {
	a.t.Helper()
	a.in.Close()
	<-a.done
	if a.err != nil {
		a.t.Fatalf("Serve: %v", a.err)
	}
	return a.out
}

func base() []wire.ChatMessage {
	return []wire.ChatMessage{{Role: "system", Content: "You are a test agent."}, {Role: "user", Content: "Fix Sum."}}
}
