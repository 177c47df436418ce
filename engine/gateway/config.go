package gateway

import (
	"fmt"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/gateway/openai"
)

// FromConfig builds the gateway .bcode/config.toml describes: the [model]
// endpoint (llama-server by default) streamed, its minimum context, and —
// only when frontier_endpoint is set — a frontier endpoint that escalation
// may use on the user's request with their approval. The frontier key is
// read from the variable frontier_key_env names, through getenv, here on
// the host; it is also returned in Secrets so every session redacts it.
func FromConfig(m config.Model, led Ledger, getenv func(string) string) (*Gateway, error) {
	if strings.TrimSpace(m.Endpoint) == "" {
		return nil, fmt.Errorf("no model endpoint: set [model] endpoint in %s (llama-server's default is %s)", config.Path, config.DefaultEndpoint)
	}
	c := openai.New(m.Endpoint, "")
	g := &Gateway{
		Backend:    &OpenAIBackend{Client: c, ModelName: m.Name, Stream: true},
		Probe:      c,
		Ledger:     led,
		MinContext: m.MinContext,
	}
	if m.FrontierEndpoint == "" {
		return g, nil
	}
	if m.FrontierKeyEnv == "" || getenv(m.FrontierKeyEnv) == "" {
		return nil, fmt.Errorf("[model] frontier_endpoint is set but its key is not: set frontier_key_env in %s to the name of a variable holding the key, and export it", config.Path)
	}
	key := getenv(m.FrontierKeyEnv)
	var b Backend
	if strings.Contains(m.FrontierEndpoint, "anthropic") {
		b = &AnthropicBackend{BaseURL: m.FrontierEndpoint, APIKey: key, ModelName: m.FrontierModel}
	} else {
		b = &OpenAIBackend{Client: openai.New(m.FrontierEndpoint, key), ModelName: m.FrontierModel}
	}
	// The config has no failure-count knob yet: escalation is on the
	// user's request only.
	g.Frontier = &Frontier{Backend: b, Policy: EscalationPolicy{Enabled: true}, ContextTokens: 128000}
	g.Secrets = append(g.Secrets, key)
	return g, nil
}
