package wire

import "encoding/json"

// InitializeParams opens a session: the agent says which protocol it speaks
// and which tools it offers.
type InitializeParams struct {
	ProtocolVersion int    `json:"protocol_version"`
	Agent           string `json:"agent"` // e.g. "bcode-agent/0.1"
	Tools           []Tool `json:"tools"`
}

// InitializeResult is the task as the host hands it to the agent.
type InitializeResult struct {
	ProtocolVersion int `json:"protocol_version"`
	// Task is the user's goal and what the host knows about it (context
	// pack, criteria, the previous attempt's strategy note), as prose for
	// the model.
	Task string `json:"task"`
	// History is the conversation of an interrupted attempt, replayed from
	// the ledger, to continue from (empty for a fresh attempt).
	History []ChatMessage `json:"history,omitempty"`
	// Budget is what is left of the task's budgets.
	MaxTurns  int `json:"max_turns"`
	MaxTokens int `json:"max_tokens"`
	TurnsUsed int `json:"turns_used"`
	// TokensUsed counts prompt and completion tokens already spent.
	TokensUsed int `json:"tokens_used"`
	// ContextTokens is the model's context window (n_ctx).
	ContextTokens int `json:"context_tokens"`
}

// Tool is one tool the agent offers, with a JSON Schema for its arguments.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ChatMessage is one message of the conversation in the OpenAI shape.
type ChatMessage struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is one call the model made. Error is set by the gateway when the
// call could not be parsed or its arguments do not fit the tool's schema:
// the agent must not execute it, only return Error to the model.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// ChatParams asks for the model's next turn.
type ChatParams struct {
	Messages []ChatMessage `json:"messages"`
}

// ChatResult is the model's turn.
type ChatResult struct {
	Message      ChatMessage `json:"message"`
	FinishReason string      `json:"finish_reason,omitempty"`
	// PromptTokens and CompletionTokens are this call's usage; TokensUsed
	// and TurnsUsed are the running totals the host counts.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TurnsUsed        int `json:"turns_used"`
	TokensUsed       int `json:"tokens_used"`
}

// ObserveParams reports what one tool call did.
type ObserveParams struct {
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
}

// ObserveResult tells the agent whether to go on. Stop is set when the host
// has detected the agent is stuck; Reason says why.
type ObserveResult struct {
	Stop   bool   `json:"stop,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// FinishParams ends the session from the agent's side.
type FinishParams struct {
	// Reason: "done" (the agent thinks the task is complete), "budget",
	// "context", "stuck", "error".
	Reason  string `json:"reason"`
	Summary string `json:"summary"`
}

// OverflowData is the Data of a CodeContextOverflow error.
type OverflowData struct {
	PromptTokens  int `json:"prompt_tokens"`
	ContextTokens int `json:"context_tokens"`
}
