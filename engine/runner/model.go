package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
)

// ErrNoModel: no model answers at the configured endpoint (or none is
// configured, or it is still loading); the error wrapping it says how to
// start one.
var ErrNoModel = errors.New("no model")

// ProbeTimeout bounds the model health probe.
const ProbeTimeout = 2 * time.Second

// ProbeModel checks that a llama-server (or any OpenAI-compatible server
// with llama.cpp's /health) answers at endpoint. Its error tells the user
// how to start one: `bcode task run` fails with it before taking any lease.
func ProbeModel(ctx context.Context, endpoint string) error {
	if strings.TrimSpace(endpoint) == "" {
		return fmt.Errorf("%w is configured: set [model] endpoint in .bcode/config.toml, then %s", ErrNoModel, startHint)
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
		return fmt.Errorf("%w answers at %s (%v): %s", ErrNoModel, endpoint, err, startHint)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the model at %s is not ready (GET /health: %s; a llama-server still loading its model answers 503): wait for it, or %s: %w", endpoint, resp.Status, startHint, ErrNoModel)
	}
	return nil
}

const startHint = "start one with `bcode model serve --model FILE.gguf`, or run `llama-server --jinja -m FILE.gguf --port 8080` yourself and set [model] endpoint in .bcode/config.toml if it is not " + config.DefaultEndpoint
