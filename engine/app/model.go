package app

import (
	"context"
	"io"
	"time"

	"github.com/bcode-dev/bcode/engine/gateway/llamaserver"
)

// ModelServer is how bcode model serve runs llama-server: its flags.
// Unlike llamaserver's options, a zero GPULayers or CPUMoE means none: a
// caller starts from DefaultModelServer.
type ModelServer struct {
	Model       string // the GGUF file (required; nothing is downloaded)
	Binary      string // llama-server's path or name on PATH
	Host        string
	Port        int
	Context     int // -c, at least config.DefaultMinContext
	GPULayers   int // -ngl: layers on the GPU
	CPUMoE      int // --n-cpu-moe: layers whose MoE experts stay in system RAM
	LoadTimeout time.Duration
	ExtraArgs   []string  // appended verbatim
	Log         io.Writer // llama-server's own output; nil: discarded
}

// DefaultModelServer is llama-server with flags for an 8 GB GPU and 64 GB
// of RAM (every layer on the GPU, MoE experts in RAM) on bcode's default
// endpoint.
func DefaultModelServer() ModelServer {
	return ModelServer{
		Binary: llamaserver.DefaultBinary, Host: llamaserver.DefaultHost, Port: llamaserver.DefaultPort,
		Context: llamaserver.DefaultContext, GPULayers: llamaserver.DefaultGPULayers, CPUMoE: llamaserver.DefaultCPUMoE,
		LoadTimeout: llamaserver.DefaultLoadTimeout,
	}
}

// options are m as llamaserver takes them.
func (m ModelServer) options() llamaserver.Options {
	o := llamaserver.Options{
		Model: m.Model, Binary: m.Binary, Host: m.Host, Port: m.Port, Context: m.Context,
		GPULayers: m.GPULayers, CPUMoE: m.CPUMoE, LoadTimeout: m.LoadTimeout, ExtraArgs: m.ExtraArgs, Log: m.Log,
	}
	// An explicit 0 means none, not llamaserver's default for an unset field.
	for _, n := range []*int{&o.GPULayers, &o.CPUMoE} {
		if *n == 0 {
			*n = llamaserver.NoLayers
		}
	}
	return o
}

// tokenizerCheck is what ServeModel counts once the model is loaded, to
// show that the tokenizer answers.
const tokenizerCheck = "func Sum(xs []int) int { return 0 }"

// ServeModel checks m, starts llama-server (starting is told its
// arguments first), waits until the model is loaded (then ready is told
// where it listens and how many tokens a one-line Go function is, or why
// the tokenizer did not answer), and restarts it whenever it dies, until
// ctx ends: then it stops the server and returns nil. A server that dies
// before it was ever ready is an error at once.
func ServeModel(ctx context.Context, m ModelServer, starting func(args []string), ready func(url string, tokens int, err error)) error {
	o := m.options()
	s, err := llamaserver.New(o)
	if err != nil {
		return err
	}
	starting(llamaserver.Args(o))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	loaded := make(chan error, 1)
	go func() { loaded <- s.WaitReady(ctx) }()
	select {
	case err := <-done:
		return err
	case err := <-loaded:
		if err != nil {
			<-done
			return nil
		}
	}
	n, err := s.CountTokens(ctx, tokenizerCheck)
	ready(llamaserver.URL(o), n, err)
	if err := <-done; err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
