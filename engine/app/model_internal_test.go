package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/gateway/llamaserver"
)

// TestModelServerZeroLayersMeansNone: bcode model serve --ngl 0 puts no
// layer on the GPU, and --n-cpu-moe 0 keeps no expert in RAM; the
// defaults are llamaserver's.
func TestModelServerZeroLayersMeansNone(t *testing.T) {
	m := DefaultModelServer()
	m.Model = "m.gguf"
	if args := strings.Join(llamaserver.Args(m.options()), " "); !strings.Contains(args, "-ngl 99 ") || !strings.Contains(args, "--n-cpu-moe 99 ") {
		t.Errorf("defaults: %s, want -ngl 99 and --n-cpu-moe 99", args)
	}
	m.GPULayers, m.CPUMoE = 0, 0
	if args := strings.Join(llamaserver.Args(m.options()), " "); !strings.Contains(args, "-ngl 0 ") || !strings.Contains(args, "--n-cpu-moe 0 ") {
		t.Errorf("zero layers: %s, want -ngl 0 and --n-cpu-moe 0", args)
	}
}

// TestServeModelChecksFirst: a llama-server that is not installed is
// refused before anything starts.
func TestServeModelChecksFirst(t *testing.T) {
	m := DefaultModelServer()
	m.Model, m.Binary = "m.gguf", "/nonexistent/llama-server"
	err := ServeModel(context.Background(), m, func([]string) { t.Error("started") }, func(string, int, error) { t.Error("ready") })
	if !errors.Is(err, llamaserver.ErrNotInstalled) {
		t.Errorf("ServeModel: %v, want ErrNotInstalled", err)
	}
}
