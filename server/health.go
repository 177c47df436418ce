package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/bcode-dev/bcode/engine/app"
)

// MethodHealth answers an editor's health check (Neovim's
// :checkhealth bcode): who this server is and whether what tasks need
// answers.
const MethodHealth = "bcode/health"

// HealthResult answers bcode/health.
type HealthResult struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	PID     int    `json:"pid"`
	Root    string `json:"root"`
	// Docker is the engine tasks run in; Model the model server the
	// workspace's .bcode/config.toml names (Endpoint).
	Docker HealthCheck `json:"docker"`
	Model  HealthCheck `json:"model"`
}

// HealthCheck is one answer of bcode/health: Detail says what was found,
// or, when !OK, what is wrong and what to do.
type HealthCheck struct {
	OK       bool   `json:"ok"`
	Detail   string `json:"detail"`
	Endpoint string `json:"endpoint,omitempty"`
}

// customHealth is bcode/health. It takes a few seconds at most: Docker
// and the model server are asked at once, each with a timeout.
func (s *Server) customHealth(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p struct{}
	if err := decodeParams(method, params, &p); err != nil {
		return nil, err
	}
	root, err := s.workspace()
	if err != nil {
		return nil, err
	}
	r := app.CheckReadiness(ctx, root)
	out := HealthResult{Name: "bcode-ls", Version: Version, PID: os.Getpid(), Root: root}
	if r.DockerErr != nil {
		out.Docker.Detail = r.DockerErr.Error()
	} else {
		v := r.Docker
		out.Docker = HealthCheck{OK: true, Detail: fmt.Sprintf("Docker %s, API %s, %s/%s", v.Engine, v.Negotiated, v.OS, v.Arch)}
	}
	out.Model.Endpoint = r.ModelEndpoint
	if r.ModelErr != nil {
		out.Model.Detail = r.ModelErr.Error()
	} else {
		out.Model.OK, out.Model.Detail = true, "the model server at "+r.ModelEndpoint+" is ready"
	}
	return out, nil
}
