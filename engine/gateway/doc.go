// Package gateway is the one way an agent's model calls leave bcode: a
// Session per attempt speaks the wire protocol with bcode-agent (run in a
// sandbox by AgentProcess), forwards each turn to the local model
// (llama-server, an OpenAI-compatible Backend) or, when policy and the
// user's approval allow it, to a frontier endpoint, and records every call
// in the ledger. Every outgoing request is redacted as a whole (secrets,
// the attempt's canaries, host paths) by its Redactor, and a session
// enforces the task's budgets and stops an agent that repeats itself.
package gateway
