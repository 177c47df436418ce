package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/engine/runner"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

// Readiness is what an editor's health check shows of a workspace: whether
// the Docker engine tasks run in answers and whether the model server the
// workspace is configured with does. Unlike ProbeSandbox it changes
// nothing (no containers are reaped).
type Readiness struct {
	Docker    DockerVersion
	DockerErr error // nil: Docker answered with Docker
	// ModelEndpoint is [model] endpoint of .bcode/config.toml at HEAD (or
	// the default); ModelErr says how to start a model when none answers.
	ModelEndpoint string
	ModelErr      error
}

// readinessTimeout bounds each question of CheckReadiness.
const readinessTimeout = 5 * time.Second

// CheckReadiness asks Docker and the workspace's model server at repo
// whether they answer, both at once, each within a few seconds.
func CheckReadiness(ctx context.Context, repo string) Readiness {
	r := Readiness{ModelEndpoint: baseConfig(ctx, repo, "HEAD").Model.Endpoint}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.Docker, r.DockerErr = dockerAnswers(ctx)
	}()
	r.ModelErr = runner.ProbeModel(ctx, r.ModelEndpoint)
	wg.Wait()
	return r
}

// dockerAnswers connects to the Docker engine and asks its version.
func dockerAnswers(ctx context.Context) (DockerVersion, error) {
	ctx, cancel := context.WithTimeout(ctx, readinessTimeout)
	defer cancel()
	e, err := docker.Connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return DockerVersion{}, fmt.Errorf("the Docker engine did not answer within %s: %w", readinessTimeout, err)
		}
		return DockerVersion{}, err
	}
	defer e.Close()
	v, err := e.Version(ctx)
	return dockerVersion(v), err
}
