package main

import "github.com/bcode-dev/bcode/engine/agentbackend"

// bcode.task.run and bcode.task.resume drive the same agent as `bcode task
// run`: bcode-agent in the Docker sandbox, talking to the gateway on the host.
func init() { agentbackend.Register() }
