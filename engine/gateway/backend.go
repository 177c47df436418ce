package gateway

import (
	"context"

	"github.com/bcode-dev/bcode/engine/gateway/openai"
)

// Backend is a model endpoint. Every backend speaks the OpenAI message
// shape to the gateway; the Anthropic one translates.
type Backend interface {
	// Endpoint and Model name the backend in the ledger.
	Endpoint() string
	Model() string
	// Complete asks for the next turn. tools is nil when the model gets the
	// tools in its prompt instead (the XML fallback).
	Complete(ctx context.Context, msgs []openai.Message, tools []openai.Tool, onDelta func(string)) (*openai.Response, error)
	// guarded is a copy of the backend whose every request passes through
	// the outbound choke point (outboundTransport). It is unexported so
	// that every backend is one of this package's: none can send around
	// the choke point.
	guarded() Backend
}

// OpenAIBackend is an OpenAI-compatible server: llama-server by default.
type OpenAIBackend struct {
	Client    *openai.Client
	ModelName string
	// Stream reads replies as server-sent events (progress, and a stalled
	// server shows as a silent stream rather than a long wait).
	Stream    bool
	MaxTokens int
}

// Endpoint implements Backend.
func (b *OpenAIBackend) Endpoint() string { return b.Client.BaseURL }

// Model implements Backend.
func (b *OpenAIBackend) Model() string { return b.ModelName }

func (b *OpenAIBackend) guarded() Backend {
	cp := *b
	c := *b.Client
	c.HTTP = guardClient(c.HTTP, 0)
	cp.Client = &c
	return &cp
}

// Complete implements Backend.
func (b *OpenAIBackend) Complete(ctx context.Context, msgs []openai.Message, tools []openai.Tool, onDelta func(string)) (*openai.Response, error) {
	return b.Client.Chat(ctx, openai.Request{Model: b.ModelName, Messages: msgs, Tools: tools, Stream: b.Stream, MaxTokens: b.MaxTokens}, onDelta)
}
