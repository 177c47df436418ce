// Package llamaserver starts and supervises llama.cpp's llama-server for
// bcode: flags that fit a machine with an 8 GB GPU and 64 GB of RAM, a
// wait on /health until the model is loaded, restarts with backoff when the
// process dies, and token counts through /tokenize. It never downloads a
// binary or a model: what is missing is reported with what to install.
package llamaserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/gateway/openai"
)

// MinContext is the smallest context bcode serves (tasks refuse less):
// config.DefaultMinContext.
const MinContext = config.DefaultMinContext

// Defaults of Options, here once: `bcode model serve`'s flags use them.
const (
	DefaultBinary      = "llama-server"
	DefaultHost        = "127.0.0.1"
	DefaultPort        = 8080 // the port of config.DefaultEndpoint
	DefaultContext     = 32768
	DefaultGPULayers   = 99
	DefaultCPUMoE      = 99
	DefaultLoadTimeout = 10 * time.Minute
)

// NoLayers asks for zero layers in GPULayers (-ngl 0: every layer on the
// CPU) or CPUMoE (--n-cpu-moe 0: every expert on the GPU), whose zero
// value means the default.
const NoLayers = -1

// Options configure the server. Zero values take the defaults noted.
type Options struct {
	// Binary is llama-server's path or name on PATH (default "llama-server").
	Binary string
	// Model is the .gguf file.
	Model string
	// Host and Port to listen on (default 127.0.0.1:8080; never a public
	// address unless the user says so).
	Host string
	Port int
	// Context is -c, the context window (default 32768, at least
	// MinContext).
	Context int
	// GPULayers is -ngl (default 99: every layer that fits goes to the GPU;
	// NoLayers for none).
	GPULayers int
	// CPUMoE is --n-cpu-moe: the MoE expert tensors of this many layers
	// stay in system RAM (default 99: all of them). On an 8 GB GPU this is
	// what lets a 30B-A3B model run: attention and the shared weights on
	// the GPU, the experts (most of the bytes, few of them used per token)
	// in the 64 GB of RAM. No effect on dense models. NoLayers for none.
	CPUMoE int
	// ExtraArgs are appended verbatim (e.g. -ot rules, --threads).
	ExtraArgs []string
	// Log receives llama-server's output (default: discarded).
	Log io.Writer
	// LoadTimeout bounds the wait for /health after a start (default 10m:
	// loading tens of GB from disk takes minutes).
	LoadTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a restart (default
	// 1s and 1m); the wait doubles on each death and resets after a run
	// that stayed up for StableAfter (default 2m).
	MinBackoff, MaxBackoff, StableAfter time.Duration
}

func (o *Options) defaults() {
	if o.Binary == "" {
		o.Binary = DefaultBinary
	}
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Context == 0 {
		o.Context = DefaultContext
	}
	// NoLayers stays until Args, so defaults can run again on the result.
	if o.GPULayers == 0 {
		o.GPULayers = DefaultGPULayers
	}
	if o.CPUMoE == 0 {
		o.CPUMoE = DefaultCPUMoE
	}
	if o.LoadTimeout == 0 {
		o.LoadTimeout = DefaultLoadTimeout
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = time.Minute
	}
	if o.StableAfter == 0 {
		o.StableAfter = 2 * time.Minute
	}
}

// Args returns llama-server's arguments for o: the model, the context
// window as one slot, every layer on the GPU with the MoE experts in RAM,
// flash attention, a q8_0 KV cache (half the memory of f16 for a
// negligible loss), and --jinja so the model's own chat template renders
// tools and tool calls come back natively.
func Args(o Options) []string {
	o.defaults()
	args := []string{
		"-m", o.Model,
		"--host", o.Host,
		"--port", strconv.Itoa(o.Port),
		"-c", strconv.Itoa(o.Context),
		"-np", "1",
		"-ngl", strconv.Itoa(max(o.GPULayers, 0)),
		"--n-cpu-moe", strconv.Itoa(max(o.CPUMoE, 0)),
		"-fa", "on",
		"--cache-type-k", "q8_0",
		"--cache-type-v", "q8_0",
		"--jinja",
	}
	return append(args, o.ExtraArgs...)
}

// ErrNotInstalled: llama-server is not on PATH.
var ErrNotInstalled = errors.New("llama-server not found")

// Check validates o before anything starts: the binary exists and is
// executable, the model is a readable GGUF file, the context is large
// enough. It returns the binary's path.
func Check(o Options) (string, error) {
	o.defaults()
	bin, err := exec.LookPath(o.Binary)
	if err != nil {
		return "", fmt.Errorf("%w (%q): install llama.cpp's llama-server — build it from https://github.com/ggml-org/llama.cpp (cmake -B build -DGGML_CUDA=ON && cmake --build build --target llama-server) or use your distribution's llama.cpp package — and put it on PATH or pass --llama-server PATH; bcode does not download it", ErrNotInstalled, o.Binary)
	}
	if o.Model == "" {
		return "", errors.New("no model: pass --model FILE.gguf (a GGUF file you already have; bcode does not download models)")
	}
	f, err := os.Open(o.Model)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("model file %s does not exist: pass the path of a .gguf file you have downloaded (bcode does not download models)", o.Model)
		}
		return "", fmt.Errorf("model file: %w", err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "GGUF" {
		return "", fmt.Errorf("%s is not a GGUF model file (it does not start with the GGUF magic); llama-server needs a .gguf file", o.Model)
	}
	if o.Context < MinContext {
		return "", fmt.Errorf("context %d is below the %d tokens a task needs", o.Context, MinContext)
	}
	return bin, nil
}

// Supervisor runs llama-server and restarts it when it dies.
type Supervisor struct {
	opts   Options
	bin    string
	client *openai.Client

	mu       sync.Mutex
	ready    chan struct{} // closed while the server is healthy
	isReady  bool
	restarts int
	pid      int
}

// New checks o and returns a supervisor; Run starts it.
func New(o Options) (*Supervisor, error) {
	o.defaults()
	bin, err := Check(o)
	if err != nil {
		return nil, err
	}
	return &Supervisor{opts: o, bin: bin, client: openai.New(URL(o), ""), ready: make(chan struct{})}, nil
}

// URL is where the server listens.
func URL(o Options) string {
	o.defaults()
	return "http://" + net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
}

// Client talks to the supervised server.
func (s *Supervisor) Client() *openai.Client { return s.client }

// Restarts is how many times the server was restarted after dying.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// PID is the running server's process id (0 when none runs).
func (s *Supervisor) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// WaitReady blocks until the server answers /health or ctx ends.
func (s *Supervisor) WaitReady(ctx context.Context) error {
	s.mu.Lock()
	ch := s.ready
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Supervisor) setReady(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok && !s.isReady {
		close(s.ready)
	} else if !ok && s.isReady {
		s.ready = make(chan struct{})
	}
	s.isReady = ok
}

// CountTokens counts text with the model's tokenizer (/tokenize).
func (s *Supervisor) CountTokens(ctx context.Context, text string) (int, error) {
	return s.client.Tokenize(ctx, text)
}

// Run starts llama-server, waits for /health, and restarts it with
// backoff whenever it exits, until ctx ends; then it stops the server
// (SIGTERM, then SIGKILL after 10s) and returns ctx's error. A server that
// dies before it ever became healthy on its first start is reported at
// once: the flags or the model are wrong, and restarting would only repeat
// the failure.
func (s *Supervisor) Run(ctx context.Context) error {
	backoff := s.opts.MinBackoff
	first := true
	for {
		start := time.Now()
		healthy, err := s.runOnce(ctx)
		s.setReady(false)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if first && !healthy {
			return fmt.Errorf("llama-server exited before it was ready: %w (see its log above)", err)
		}
		first = false
		if time.Since(start) >= s.opts.StableAfter {
			backoff = s.opts.MinBackoff
		}
		s.logf("llama-server died (%v); restarting in %s", err, backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, s.opts.MaxBackoff)
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.opts.Log != nil {
		fmt.Fprintf(s.opts.Log, "bcode: "+format+"\n", args...)
	}
}

// runOnce runs one server process until it exits or ctx ends, and reports
// whether it became healthy.
func (s *Supervisor) runOnce(ctx context.Context) (healthy bool, err error) {
	cmd := exec.Command(s.bin, Args(s.opts)...)
	logw := s.opts.Log
	if logw == nil {
		logw = io.Discard
	}
	var tail tailBuffer
	cmd.Stdout = io.MultiWriter(logw, &tail)
	cmd.Stderr = io.MultiWriter(logw, &tail)
	inOwnProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("starting %s: %w", s.bin, err)
	}
	s.mu.Lock()
	s.pid = cmd.Process.Pid
	s.mu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		s.mu.Lock()
		s.pid = 0
		s.mu.Unlock()
	}()

	probe := time.NewTicker(250 * time.Millisecond)
	defer probe.Stop()
	deadline := time.After(s.opts.LoadTimeout)
	for {
		select {
		case err := <-exited:
			return healthy, exitError(err, tail.String())
		case <-ctx.Done():
			stopGroup(cmd.Process)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				killGroup(cmd.Process)
				<-exited
			}
			return healthy, ctx.Err()
		case <-deadline:
			if !healthy {
				killGroup(cmd.Process)
				<-exited
				return false, fmt.Errorf("not healthy after %s (model still loading? raise --load-timeout)", s.opts.LoadTimeout)
			}
		case <-probe.C:
			hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := s.client.Health(hctx)
			cancel()
			if err == nil && !healthy {
				healthy = true
				s.setReady(true)
				s.logf("llama-server ready at %s (pid %d)", URL(s.opts), cmd.Process.Pid)
			}
		}
	}
}

func exitError(err error, tail string) error {
	if err == nil {
		err = errors.New("exited with status 0")
	}
	if tail = strings.TrimSpace(tail); tail != "" {
		return fmt.Errorf("%w; last output: %s", err, tail)
	}
	return err
}

// tailBuffer keeps the last 2 KiB written.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.b, nil))
}

// ModelName is the model file's base name without .gguf, as a default id.
func ModelName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".gguf")
}
