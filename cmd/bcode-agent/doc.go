// Command bcode-agent is the coding agent that runs inside bcode's sandbox
// container. It is a static Go binary (CGO_ENABLED=0) mounted read-only
// into the container, and it is Linux-only by design: every file but
// other.go carries `//go:build linux`, and on any other system the binary
// only prints that it must run in bcode's Linux container and exits 2.
//
// Its tools are a terminal (bash with a timeout and an output cap), a file
// editor (view, create, str_replace with an exact, unique anchor, insert,
// undo; every path confined to the worktree through os.Root) and a task
// tracker (plan items with a status), plus finish. It keeps a budget of
// turns and tokens and condenses old turns when the conversation nears the
// model's context window.
//
// Its only channel out is stdio: newline-delimited JSON-RPC 2.0 to the
// gateway on the host (engine/gateway/wire), which holds every key, redacts
// what leaves, and records the conversation in the ledger. The container
// has no network; the agent never sees an API key.
//
// Usage (the gateway starts it):
//
//	bcode-agent --worktree DIR [--terminal-timeout 120s] [--output-cap 16384]
package main
