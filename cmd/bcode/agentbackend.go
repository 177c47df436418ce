package main

import "github.com/bcode-dev/bcode/engine/agentbackend"

// The agent `bcode task run` drives: bcode-agent in the Docker sandbox,
// talking to the model gateway on the host.
func init() { agentbackend.Register() }
