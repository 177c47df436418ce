package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway/openai"
	"github.com/bcode-dev/bcode/engine/gateway/toolcall"
	"github.com/bcode-dev/bcode/engine/gateway/wire"
)

// DefaultMinContext is the smallest context window a task may run with
// (config.DefaultMinContext, the [model] default).
const DefaultMinContext = config.DefaultMinContext

// DefaultStuckRepeats is how many identical turns in a row (same actions,
// same observations) end an attempt as stuck.
const DefaultStuckRepeats = 3

// maxObservation caps one tool result as stored and sent (the agent caps
// its own output well below this; this guards the host).
const maxObservation = 256 << 10

// Gateway carries model calls from agents to a model, on the host.
type Gateway struct {
	// Backend is the local model (llama-server).
	Backend Backend
	// Probe reads llama-server's /props and /slots for the context size
	// and tool support; nil for servers without them (the context size
	// is then ContextTokens, and tools go in the prompt).
	Probe *openai.Client
	// ContextTokens is used when Probe is nil.
	ContextTokens int
	Ledger        Ledger
	// MinContext refuses smaller models (default DefaultMinContext).
	MinContext int
	// StuckRepeats (default DefaultStuckRepeats).
	StuckRepeats int
	// Frontier, when set, is the cloud endpoint escalation may use.
	Frontier *Frontier
	// Secrets are values every session must redact whatever else it
	// knows (the frontier key); callers building a Redactor add them.
	Secrets []string
	// OnDelta, when set, receives streamed model text (progress).
	OnDelta func(taskID, text string)
}

// ModelInfo is what the gateway learned about the model at session start.
type ModelInfo struct {
	ContextTokens int
	NativeTools   bool
}

// ErrContextTooSmall: the model's window is below the minimum.
var ErrContextTooSmall = errors.New("model context window too small")

// CheckModel reads the model's context window and tool support and refuses
// a window below the minimum, saying how to fix it.
func (g *Gateway) CheckModel(ctx context.Context) (ModelInfo, error) {
	minCtx := g.MinContext
	if minCtx <= 0 {
		minCtx = DefaultMinContext
	}
	info := ModelInfo{ContextTokens: g.ContextTokens}
	if g.Probe != nil {
		p, err := g.Probe.Props(ctx)
		if err != nil {
			return info, fmt.Errorf("model server at %s: reading /props: %w (is llama-server running? start it with `bcode model serve --model FILE.gguf`)", g.Probe.BaseURL, err)
		}
		info.ContextTokens, info.NativeTools = p.NCtx, p.SupportsTools
		if info.ContextTokens == 0 {
			n, err := g.Probe.SlotsNCtx(ctx)
			if err != nil {
				return info, fmt.Errorf("model server at %s: /props has no n_ctx and /slots failed: %w", g.Probe.BaseURL, err)
			}
			info.ContextTokens = n
		}
	}
	if info.ContextTokens < minCtx {
		return info, fmt.Errorf("%w: the model serves %d tokens of context, a task needs at least %d; restart llama-server with -c %d or more (bcode model serve does)",
			ErrContextTooSmall, info.ContextTokens, minCtx, minCtx)
	}
	return info, nil
}

// SessionSpec is one attempt's session.
type SessionSpec struct {
	Lease   engine.Lease
	Attempt int64
	// Task is the prose the agent gets: goal, criteria, context pack,
	// the last attempt's strategy note.
	Task    string
	Budgets engine.Budgets
	// Redactor cleans everything before it leaves the host.
	Redactor *Redactor
	// Resume is the transcript of an interrupted attempt to continue.
	Resume *Transcript
	// Escalate, when set and allowed by policy, sends this session to the
	// frontier endpoint instead of the local model.
	Escalate *EscalationRequest
}

// Outcome is how a session ended.
type Outcome struct {
	// Reason: "done", "stuck", "budget", "context", "error" (what the
	// agent or the gateway reported), or "agent_exited" when the agent
	// went away without finishing.
	Reason  string `json:"reason"`
	Summary string `json:"summary,omitempty"`
	// Note is the strategy note for the next attempt (set when stuck).
	Note       string `json:"note,omitempty"`
	Turns      int    `json:"turns"`
	Tokens     int    `json:"tokens"`
	ModelCalls int    `json:"model_calls"`
	// Redactions counts what redaction removed over the session.
	Redactions int `json:"redactions"`
}

// Session is one agent's conversation through the gateway.
type Session struct {
	g       *Gateway
	spec    SessionSpec
	info    ModelInfo
	backend Backend

	mu          sync.Mutex
	initialized bool
	tools       []wire.Tool
	set         toolcall.Set
	oaTools     []openai.Tool
	turns       int
	tokens      int
	pending     map[string]pendingCall // call id → call, for this turn
	turnPrint   []string               // fingerprint parts of the turn in progress
	lastPrint   [32]byte
	repeats     int
	stuck       bool
	out         Outcome
	finished    bool
	violated    bool
	// issued are the call ids the gateway handed the agent (and those of
	// a resumed transcript): the only ids a conversation may name.
	issued map[string]bool

	// Turn stepping (see StepTurns).
	step        bool
	permits     chan struct{}
	reports     chan TurnReport
	ended       chan struct{}
	turnOpen    bool
	turnTokens  int
	turnSummary []string
	turnFinish  bool
}

// TurnReport is one finished agent turn, for a caller stepping turns.
type TurnReport struct {
	Turn int
	// Summary is one line naming the calls the turn made.
	Summary string
	// Tokens is what the turn's model calls spent (prompt + completion).
	Tokens int
	// Finish: the turn ran a valid finish call; the agent thinks the task
	// is complete.
	Finish bool
	// Stuck: the host stopped the agent for repeating itself; Note says
	// what to do differently.
	Stuck bool
	Note  string
}

// StepTurns makes the agent wait before each turn until NextTurn lets it
// run, so the caller can act between turns (the task runner commits a
// checkpoint) while the agent is not touching the worktree. Call it before
// Serve.
func (s *Session) StepTurns() {
	s.step = true
	s.permits = make(chan struct{}, 1)
	s.reports = make(chan TurnReport, 1)
}

// ErrSessionEnded: NextTurn was called after the agent finished or exited.
var ErrSessionEnded = errors.New("the agent session has ended")

// NextTurn lets the agent take one turn and waits until it ends. When the
// agent ends the session instead (it finished, gave up, or exited), it
// returns ErrSessionEnded and Serve's Outcome says how.
func (s *Session) NextTurn(ctx context.Context) (TurnReport, error) {
	if !s.step {
		return TurnReport{}, errors.New("gateway: NextTurn without StepTurns")
	}
	select {
	case s.permits <- struct{}{}:
	default: // a permit is already waiting
	}
	select {
	case r := <-s.reports:
		return r, nil
	case <-s.ended:
		select {
		case r := <-s.reports:
			return r, nil
		default:
		}
		return TurnReport{}, ErrSessionEnded
	case <-ctx.Done():
		return TurnReport{}, ctx.Err()
	}
}

type pendingCall struct {
	name string
	args string
}

// Open checks the model and prepares a session. A context window below the
// minimum is refused here, before the agent starts.
func (g *Gateway) Open(ctx context.Context, spec SessionSpec) (*Session, error) {
	if g.Ledger == nil {
		return nil, errors.New("gateway: no ledger")
	}
	if spec.Redactor == nil {
		return nil, errors.New("gateway: a session needs a Redactor (nothing leaves the host unredacted)")
	}
	backend := g.Backend
	var info ModelInfo
	if spec.Escalate != nil {
		if g.Frontier == nil {
			return nil, errors.New("gateway: escalation requested but no frontier endpoint is configured")
		}
		if err := g.Frontier.Policy.Allow(*spec.Escalate, spec.Lease.TaskID); err != nil {
			return nil, err
		}
		backend = g.Frontier.Backend
		info = ModelInfo{ContextTokens: g.Frontier.ContextTokens, NativeTools: true}
		data, _ := json.Marshal(spec.Escalate)
		if _, err := g.Ledger.Append(ctx, &spec.Lease, &engine.Event{TaskID: spec.Lease.TaskID, Attempt: spec.Attempt, Kind: EventEscalated, Data: data}); err != nil {
			return nil, fmt.Errorf("gateway: recording the escalation: %w", err)
		}
	} else {
		if backend == nil {
			return nil, errors.New("gateway: no model backend")
		}
		var err error
		if info, err = g.CheckModel(ctx); err != nil {
			return nil, err
		}
	}
	s := &Session{g: g, spec: spec, info: info, backend: backend.guarded(), pending: map[string]pendingCall{}, ended: make(chan struct{}), issued: map[string]bool{}}
	if spec.Resume != nil {
		s.turns, s.tokens = spec.Resume.Turns, spec.Resume.Tokens
		for _, m := range spec.Resume.Messages {
			for _, c := range m.ToolCalls {
				s.issued[c.ID] = true
			}
		}
	}
	return s, nil
}

// Info is what CheckModel found.
func (s *Session) Info() ModelInfo { return s.info }

// Serve answers the agent on r/w until it closes its output or ctx ends,
// and reports how the session ended.
func (s *Session) Serve(ctx context.Context, r io.Reader, w io.Writer) (Outcome, error) {
	conn := wire.NewConn(r, w)
	err := conn.Serve(ctx, s.handle)
	var ve *wire.ViolationError
	if errors.As(err, &ve) {
		s.mu.Lock()
		recorded := s.violated
		s.mu.Unlock()
		if !recorded {
			s.violation(ctx, ve.Kind, ve.Detail)
		}
	}
	close(s.ended)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.out
	out.Turns, out.Tokens = s.turns, s.tokens
	if !s.finished {
		switch {
		case s.stuck:
			out.Reason = "stuck"
		default:
			out.Reason = "agent_exited"
		}
	}
	return out, err
}

func (s *Session) handle(ctx context.Context, method string, params json.RawMessage) (any, *wire.Error) {
	switch method {
	case wire.MethodInitialize:
		return s.initialize(params)
	}
	s.mu.Lock()
	ok, violated := s.initialized, s.violated
	s.mu.Unlock()
	if violated {
		return nil, wire.Errorf(wire.CodeViolation, "the session ended on a protocol violation")
	}
	if !ok {
		return nil, s.violation(ctx, ViolationNotInitialized, "a call ("+clipLine(method, 40)+") before initialize")
	}
	switch method {
	case wire.MethodChat:
		return s.chat(ctx, params)
	case wire.MethodObserve:
		return s.observe(ctx, params)
	case wire.MethodFinish:
		return s.finish(ctx, params)
	}
	return nil, s.violation(ctx, ViolationUnknownMethod, fmt.Sprintf("no method %q", clipLine(method, 40)))
}

// Kinds of protocol violation the session itself finds (the wire layer
// finds the others: see wire.ViolationError).
const (
	ViolationNotInitialized = "not_initialized"
	ViolationUnknownMethod  = "unknown_method"
	ViolationReinitialize   = "initialize_twice"
	ViolationNotPending     = "not_pending"
	ViolationForgedCall     = "forged_call"
	ViolationRole           = "role"
	ViolationRefused        = "refused"
)

// EventViolation records a protocol violation (or a request refused for
// holding a secret where it cannot be redacted); the session ends on it.
const EventViolation engine.EventKind = "agent.violation"

// violation records that the agent broke the protocol and ends the
// session: nothing more from its channel is trusted. The returned error
// makes wire.Conn.Serve stop.
func (s *Session) violation(ctx context.Context, kind, detail string) *wire.Error {
	// The detail may quote what the agent sent: the ledger gets it
	// redacted.
	detail, _ = s.spec.Redactor.Redact(detail)
	s.mu.Lock()
	s.violated, s.finished = true, true
	s.out.Reason, s.out.Summary = "violation", kind+": "+detail
	turn := s.turns
	s.mu.Unlock()
	data, _ := json.Marshal(map[string]any{"turn": turn, "kind": kind, "detail": detail})
	_, _ = s.g.Ledger.Append(context.WithoutCancel(ctx), &s.spec.Lease, &engine.Event{TaskID: s.spec.Lease.TaskID, Attempt: s.spec.Attempt, Kind: EventViolation, Data: data})
	return wire.Errorf(wire.CodeViolation, "protocol violation (%s): %s; the session ends", kind, detail)
}

// checkConversation accepts only messages the protocol can produce: the
// four roles, and call ids the gateway issued.
func (s *Session) checkConversation(msgs []wire.ChatMessage) (kind, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return ViolationRole, fmt.Sprintf("message %d has role %q", i, clipLine(m.Role, 20))
		}
		for _, c := range m.ToolCalls {
			if !s.issued[c.ID] {
				return ViolationForgedCall, fmt.Sprintf("message %d names a tool call the gateway never issued", i)
			}
		}
		if m.ToolCallID != "" && !s.issued[m.ToolCallID] {
			return ViolationForgedCall, fmt.Sprintf("message %d answers a tool call the gateway never issued", i)
		}
	}
	return "", ""
}

// maxTools and maxToolSchema bound what an agent may declare.
const (
	maxTools      = 32
	maxToolSchema = 16 << 10
)

func (s *Session) initialize(params json.RawMessage) (any, *wire.Error) {
	var p wire.InitializeParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "initialize: %v", err)
	}
	if p.ProtocolVersion != wire.ProtocolVersion {
		return nil, wire.Errorf(wire.CodeVersionMismatch, "protocol version mismatch: the gateway speaks %d, the agent %d; rebuild bcode-agent with this bcode", wire.ProtocolVersion, p.ProtocolVersion)
	}
	if len(p.Tools) == 0 || len(p.Tools) > maxTools {
		return nil, wire.Errorf(wire.CodeInvalidParams, "initialize: %d tools (want 1 to %d)", len(p.Tools), maxTools)
	}
	var tools []toolcall.Tool
	var oa []openai.Tool
	for _, t := range p.Tools {
		if t.Name == "" || len(t.Parameters) > maxToolSchema {
			return nil, wire.Errorf(wire.CodeInvalidParams, "initialize: tool %q: empty name or schema over %d bytes", t.Name, maxToolSchema)
		}
		sc, err := toolcall.CompileSchema(t.Parameters)
		if err != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "initialize: tool %s: %v", t.Name, err)
		}
		tools = append(tools, toolcall.Tool{Name: t.Name, Schema: sc})
		oa = append(oa, openai.Tool{Type: "function", Function: openai.ToolFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	s.mu.Lock()
	again := s.initialized
	s.mu.Unlock()
	if again {
		return nil, s.violation(context.Background(), ViolationReinitialize, "initialize called twice")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialized = true
	s.tools, s.set, s.oaTools = p.Tools, toolcall.NewSet(tools), oa
	res := wire.InitializeResult{
		ProtocolVersion: wire.ProtocolVersion,
		Task:            s.spec.Task,
		MaxTurns:        s.spec.Budgets.MaxTurns,
		MaxTokens:       s.spec.Budgets.MaxTokens,
		TurnsUsed:       s.turns,
		TokensUsed:      s.tokens,
		ContextTokens:   s.info.ContextTokens,
	}
	if s.spec.Resume != nil {
		res.History = s.spec.Resume.Messages
	}
	return res, nil
}

// budgetSpent says which budget is spent, if any.
func (s *Session) budgetSpent() string {
	b := s.spec.Budgets
	if b.MaxTurns > 0 && s.turns >= b.MaxTurns {
		return fmt.Sprintf("turn budget spent (%d of %d)", s.turns, b.MaxTurns)
	}
	if b.MaxTokens > 0 && s.tokens >= b.MaxTokens {
		return fmt.Sprintf("token budget spent (%d of %d)", s.tokens, b.MaxTokens)
	}
	return ""
}

func (s *Session) chat(ctx context.Context, params json.RawMessage) (any, *wire.Error) {
	var p wire.ChatParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "model.chat: %v", err)
	}
	if len(p.Messages) == 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "model.chat: no messages")
	}
	s.mu.Lock()
	if s.stuck {
		s.mu.Unlock()
		return nil, wire.Errorf(wire.CodeStuck, "stopped: %s", s.out.Note)
	}
	if why := s.budgetSpent(); why != "" {
		s.mu.Unlock()
		return nil, wire.Errorf(wire.CodeBudgetSpent, "%s", why)
	}
	if len(s.pending) > 0 {
		n := len(s.pending)
		s.mu.Unlock()
		return nil, s.violation(ctx, ViolationNotPending, fmt.Sprintf("model.chat while %d tool calls of the last turn have no observation", n))
	}
	native := s.info.NativeTools
	wait := s.step && !s.turnOpen
	s.mu.Unlock()
	if kind, detail := s.checkConversation(p.Messages); kind != "" {
		return nil, s.violation(ctx, kind, detail)
	}
	if wait {
		select {
		case <-s.permits:
		case <-ctx.Done():
			return nil, wire.Errorf(wire.CodeModelUnavailable, "the session is closing")
		}
		s.mu.Lock()
		s.turnOpen, s.turnTokens, s.turnSummary, s.turnFinish = true, 0, nil, false
		s.mu.Unlock()
	}

	resp, werr := s.callModel(ctx, s.outbound(p.Messages, native), native)
	if werr != nil {
		return nil, werr
	}

	msg := s.inbound(resp, native)
	s.mu.Lock()
	s.turns++
	s.tokens += resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	s.out.ModelCalls++
	turn := s.turns
	s.turnTokens += resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	s.turnPrint = []string{msg.Content}
	for _, c := range msg.ToolCalls {
		s.turnSummary = append(s.turnSummary, strings.TrimSpace(c.Name+" "+clipLine(string(c.Arguments), 80)))
	}
	if len(msg.ToolCalls) == 0 {
		s.turnSummary = append(s.turnSummary, "said: "+clipLine(msg.Content, 80))
	}
	for _, c := range msg.ToolCalls {
		s.issued[c.ID] = true
		if c.Error == "" {
			s.pending[c.ID] = pendingCall{name: c.Name, args: string(c.Arguments)}
		} else {
			// An invalid call is answered by the agent with its error; it
			// is still an observation the log must match.
			s.pending[c.ID] = pendingCall{name: c.Name, args: "invalid: " + c.Error}
		}
		s.turnPrint = append(s.turnPrint, c.Name, string(c.Arguments), c.Error)
	}
	noCalls := len(msg.ToolCalls) == 0
	res := wire.ChatResult{Message: msg, FinishReason: resp.FinishReason, PromptTokens: resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens, TurnsUsed: s.turns, TokensUsed: s.tokens}
	s.mu.Unlock()

	data, _ := json.Marshal(actionData{Turn: turn, Content: msg.Content, Calls: msg.ToolCalls, PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens})
	if _, err := s.g.Ledger.Append(ctx, &s.spec.Lease, &engine.Event{TaskID: s.spec.Lease.TaskID, Attempt: s.spec.Attempt, Kind: EventAction, Data: data}); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "recording the action: %v", err)
	}
	if noCalls {
		s.endTurn(ctx)
	}
	return res, nil
}

// callModel sends one request through the backend (and so through the
// outbound choke point) and records the call in the ledger. A request the
// choke point refuses is a violation that ends the session.
func (s *Session) callModel(ctx context.Context, msgs []openai.Message, native bool) (*openai.Response, *wire.Error) {
	var tools []openai.Tool
	if native {
		tools = s.oaTools
	}
	var onDelta func(string)
	if s.g.OnDelta != nil {
		onDelta = func(t string) { s.g.OnDelta(s.spec.Lease.TaskID, t) }
	}
	start := time.Now()
	gctx, guard := withGuard(ctx, s.spec.Redactor)
	resp, err := s.backend.Complete(gctx, msgs, tools, onDelta)
	s.mu.Lock()
	s.out.Redactions += guard.changes
	s.mu.Unlock()
	if errors.Is(err, ErrRefused) {
		return nil, s.violation(ctx, ViolationRefused, err.Error())
	}
	call := &engine.ModelCall{TaskID: s.spec.Lease.TaskID, Attempt: s.spec.Attempt, Endpoint: s.backend.Endpoint(), Model: s.backend.Model(), DurationMS: time.Since(start).Milliseconds()}
	if err != nil {
		call.Error = err.Error()
		if _, lerr := s.g.Ledger.RecordModelCall(ctx, s.spec.Lease, call); lerr != nil {
			return nil, wire.Errorf(wire.CodeInternal, "recording the model call: %v", lerr)
		}
		if openai.IsContextOverflow(err) {
			var ae *openai.APIError
			errors.As(err, &ae)
			e := wire.Errorf(wire.CodeContextOverflow, "the conversation does not fit the model's context: %v", err)
			if ae != nil {
				e.Data, _ = json.Marshal(wire.OverflowData{PromptTokens: ae.NPromptTokens, ContextTokens: ae.NCtx})
			}
			return nil, e
		}
		return nil, wire.Errorf(wire.CodeModelUnavailable, "model call failed: %v", err)
	}
	call.PromptTokens, call.CompletionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
	call.Timings = resp.Timings
	if resp.Model != "" && call.Model == "" {
		call.Model = resp.Model
	}
	if _, err := s.g.Ledger.RecordModelCall(ctx, s.spec.Lease, call); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "recording the model call: %v", err)
	}
	return resp, nil
}

// outbound shapes the agent's messages for the model: in the fallback
// the tool descriptions go into the system message and tool traffic is
// written as text. It redacts nothing: the request the backend builds from
// them is redacted whole on its way out (outboundTransport).
func (s *Session) outbound(in []wire.ChatMessage, native bool) []openai.Message {
	out := make([]openai.Message, 0, len(in))
	for i, m := range in {
		om := openai.Message{Role: m.Role, Content: m.Content}
		if !native && i == 0 && m.Role == "system" {
			specs := make([]toolcall.Spec, 0, len(s.tools))
			for _, t := range s.tools {
				specs = append(specs, toolcall.Spec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
			}
			om.Content += "\n\n" + toolcall.FallbackPrompt(specs)
		}
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			if native {
				for _, c := range m.ToolCalls {
					tc := openai.ToolCall{ID: c.ID, Type: "function"}
					tc.Function.Name = c.Name
					if tc.Function.Name == "" {
						// A text call too broken to name its tool; the
						// template still needs a name to pair the result.
						tc.Function.Name = "invalid_call"
					}
					tc.Function.Arguments = string(c.Arguments)
					if tc.Function.Arguments == "" {
						tc.Function.Arguments = "{}"
					}
					om.ToolCalls = append(om.ToolCalls, tc)
				}
			} else if !strings.Contains(om.Content, "<function=") && !strings.Contains(om.Content, "<tool_call>") {
				om.Content = strings.TrimSpace(om.Content + "\n" + renderCallsXML(m.ToolCalls))
			}
		case m.Role == "tool" && !native:
			om.Role = "user"
			om.Content = fmt.Sprintf("<tool_response id=%q>\n%s\n</tool_response>", m.ToolCallID, om.Content)
		case m.Role == "tool":
			om.ToolCallID = m.ToolCallID
		}
		out = append(out, om)
	}
	return out
}

func renderCallsXML(calls []wire.ToolCall) string {
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "<tool_call>\n<function=%s>\n", c.Name)
		var args map[string]json.RawMessage
		if json.Unmarshal(c.Arguments, &args) == nil {
			for k, v := range args {
				var str string
				if json.Unmarshal(v, &str) == nil {
					fmt.Fprintf(&b, "<parameter=%s>\n%s\n</parameter>\n", k, str)
				} else {
					fmt.Fprintf(&b, "<parameter=%s>\n%s\n</parameter>\n", k, string(v))
				}
			}
		}
		b.WriteString("</function>\n</tool_call>\n")
	}
	return b.String()
}

// inbound turns the model's reply into the agent's message: native calls
// are decoded and checked, text calls parsed; any call that fails carries
// an Error and will not run.
func (s *Session) inbound(resp *openai.Response, native bool) wire.ChatMessage {
	msg := wire.ChatMessage{Role: "assistant", Content: resp.Message.Content}
	var calls []toolcall.Call
	if native && len(resp.Message.ToolCalls) > 0 {
		for i, tc := range resp.Message.ToolCalls {
			c := toolcall.Call{ID: tc.ID, Name: tc.Function.Name}
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d_%d", s.turns+1, i+1)
			}
			args, err := toolcall.NativeArguments(json.RawMessage(quoteJSON(tc.Function.Arguments)))
			if err != nil {
				c.Error = err.Error()
			} else {
				c.Arguments = args
			}
			s.set.Check(&c)
			calls = append(calls, c)
		}
	} else {
		// Without native calls (or when a native-capable model still
		// wrote them as text) the text form is parsed.
		var rest string
		calls, rest = toolcall.Parse(resp.Message.Content, s.set)
		if len(calls) > 0 {
			msg.Content = rest
			for i := range calls {
				calls[i].ID = fmt.Sprintf("call_%d_%d", s.turns+1, i+1)
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range calls {
		if seen[c.ID] {
			c.ID = fmt.Sprintf("%s_%d", c.ID, len(seen))
		}
		seen[c.ID] = true
		msg.ToolCalls = append(msg.ToolCalls, wire.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Error: c.Error})
	}
	return msg
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

type actionData struct {
	Turn             int             `json:"turn"`
	Content          string          `json:"content,omitempty"`
	Calls            []wire.ToolCall `json:"calls,omitempty"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
}

type observationData struct {
	Turn    int    `json:"turn"`
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
}

func (s *Session) observe(ctx context.Context, params json.RawMessage) (any, *wire.Error) {
	var p wire.ObserveParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "agent.observe: %v", err)
	}
	s.mu.Lock()
	pc, ok := s.pending[p.CallID]
	if !ok {
		s.mu.Unlock()
		return nil, s.violation(ctx, ViolationNotPending, "agent.observe for a call that is not pending (never issued, or already answered)")
	}
	delete(s.pending, p.CallID)
	turn := s.turns
	s.mu.Unlock()
	if len(p.Output) > maxObservation {
		p.Output = p.Output[:maxObservation] + "\n[output cut by the gateway]"
	}
	out, n := s.spec.Redactor.Redact(p.Output)
	data, _ := json.Marshal(observationData{Turn: turn, CallID: p.CallID, Tool: pc.name, Output: out, IsError: p.IsError})
	if _, err := s.g.Ledger.Append(ctx, &s.spec.Lease, &engine.Event{TaskID: s.spec.Lease.TaskID, Attempt: s.spec.Attempt, Kind: EventObservation, Data: data}); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "recording the observation: %v", err)
	}
	s.mu.Lock()
	s.out.Redactions += n
	s.turnPrint = append(s.turnPrint, "=>", out)
	if pc.name == "finish" && !p.IsError && !strings.HasPrefix(pc.args, "invalid: ") {
		s.turnFinish = true
	}
	done := len(s.pending) == 0
	s.mu.Unlock()
	if done {
		s.endTurn(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stuck {
		return wire.ObserveResult{Stop: true, Reason: s.out.Note}, nil
	}
	return wire.ObserveResult{}, nil
}

// endTurn compares the finished turn with the one before it. Call ids
// differ from turn to turn, so the fingerprint is of names, arguments and
// outputs only.
func (s *Session) endTurn(ctx context.Context) {
	s.mu.Lock()
	h := sha256.New()
	for _, part := range s.turnPrint {
		fmt.Fprintf(h, "%d:%s\x00", len(part), part)
	}
	var fp [32]byte
	copy(fp[:], h.Sum(nil))
	if fp == s.lastPrint {
		s.repeats++
	} else {
		s.repeats = 1
		s.lastPrint = fp
	}
	limit := s.g.StuckRepeats
	if limit <= 0 {
		limit = DefaultStuckRepeats
	}
	becameStuck := !s.stuck && s.repeats >= limit
	var what string
	if becameStuck {
		s.stuck = true
		what = describeTurn(s.turnPrint)
		s.out.Note = fmt.Sprintf("The previous attempt was stopped: it repeated the same action (%s) with the same result %d times in a row. Do not repeat it. Change strategy: re-read the code and the last error, form a new hypothesis, and try a different edit or command.", what, s.repeats)
	}
	note, turn := s.out.Note, s.turns
	var report *TurnReport
	if s.step && s.turnOpen {
		s.turnOpen = false
		report = &TurnReport{Turn: turn, Summary: strings.Join(s.turnSummary, "; "), Tokens: s.turnTokens, Finish: s.turnFinish, Stuck: s.stuck, Note: note}
	}
	s.mu.Unlock()
	defer func() {
		if report != nil {
			s.reports <- *report
		}
	}()
	if becameStuck {
		data, _ := json.Marshal(map[string]any{"turn": turn, "repeats": limit, "action": what, "note": note})
		_, _ = s.g.Ledger.Append(ctx, &s.spec.Lease, &engine.Event{TaskID: s.spec.Lease.TaskID, Attempt: s.spec.Attempt, Kind: EventStuck, Data: data})
	}
}

func describeTurn(parts []string) string {
	if len(parts) < 2 {
		return "the same reply without a tool call"
	}
	d := parts[1]
	if len(parts) > 2 {
		d += " " + parts[2]
	}
	if len(d) > 160 {
		d = d[:160] + "…"
	}
	return d
}

func (s *Session) finish(ctx context.Context, params json.RawMessage) (any, *wire.Error) {
	var p wire.FinishParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "agent.finish: %v", err)
	}
	switch p.Reason {
	case "done", "budget", "context", "stuck", "error":
	default:
		return nil, wire.Errorf(wire.CodeInvalidParams, "agent.finish: unknown reason %q", p.Reason)
	}
	summary, _ := s.spec.Redactor.Redact(p.Summary)
	s.mu.Lock()
	if s.stuck {
		p.Reason = "stuck" // the host's verdict wins over the agent's
	}
	s.finished = true
	s.out.Reason, s.out.Summary = p.Reason, summary
	data, _ := json.Marshal(map[string]any{"reason": p.Reason, "summary": summary, "turns": s.turns, "tokens": s.tokens})
	s.mu.Unlock()
	if _, err := s.g.Ledger.Append(ctx, &s.spec.Lease, &engine.Event{TaskID: s.spec.Lease.TaskID, Attempt: s.spec.Attempt, Kind: EventFinished, Data: data}); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "recording the finish: %v", err)
	}
	return struct{}{}, nil
}

// clipLine is s on one line, at most n bytes.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
