package runner

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
)

// ProbeTimeout bounds the model health probe.
const ProbeTimeout = 2 * time.Second

// ProbeModel checks that a llama-server (or any OpenAI-compatible server
// with llama.cpp's /health) answers at endpoint. Its error tells the user
// how to start one: `bcode task run` fails with it before taking any lease.
func ProbeModel(ctx context.Context, endpoint string) error {
	if strings.TrimSpace(endpoint) == "" {
		return fmt.Errorf("no model is configured: set [model] endpoint in .bcode/config.toml, then %s", startHint)
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	url := strings.TrimRight(endpoint, "/") + "/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("model endpoint %q is not a URL (fix [model] endpoint in .bcode/config.toml): %v", endpoint, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("no model answers at %s (%v): %s", endpoint, err, startHint)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the model at %s is not ready (GET /health: %s; a llama-server still loading its model answers 503): wait for it, or %s", endpoint, resp.Status, startHint)
	}
	return nil
}

const startHint = "start one with `bcode model serve --model FILE.gguf`, or run `llama-server --jinja -m FILE.gguf --port 8080` yourself and set [model] endpoint in .bcode/config.toml if it is not " + config.DefaultEndpoint
