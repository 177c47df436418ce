package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/bench"
)

// startModel starts llama-server for --model llama-server --model-file
// FILE as bcode model serve runs it (supervised: restarted if it dies) on
// a free port, and points m at it; stop ends it. Any other model is used
// where it is: stop does nothing.
func startModel(ctx context.Context, m *bench.Model, stderr io.Writer) (stop func(), err error) {
	if m.Kind != "llama-server" || m.File == "" {
		return func() {}, nil
	}
	srv := app.DefaultModelServer()
	srv.Model = m.File
	if srv.Port, err = freePort(); err != nil {
		return nil, err
	}
	m.Server = serverBuild(ctx, srv.Binary)
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- app.ServeModel(ctx, srv, func(args []string) {
			fmt.Fprintf(stderr, "bcode bench tasks: starting %s %s\n", srv.Binary, strings.Join(args, " "))
		}, func(url string, _ int, _ error) { ready <- url })
	}()
	select {
	case url := <-ready:
		m.Endpoint = url
		return func() { cancel(); <-done }, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("it stopped before the model was loaded")
		}
		return nil, fmt.Errorf("llama-server: %w", err)
	}
}

// freePort is a TCP port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// serverBuild is what llama-server --version says of its build, "" when
// it says nothing.
func serverBuild(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "version:") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
