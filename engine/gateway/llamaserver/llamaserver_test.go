package llamaserver

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeServer is a stand-in llama-server: a tiny Go program that records its
// argv, answers /health with 503 while "loading" and then 200, and counts
// tokens at /tokenize as whitespace-separated words. The supervisor under
// test is the real one.
const fakeServer = `package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	fs := flag.NewFlagSet("llama-server", flag.ContinueOnError)
	host := fs.String("host", "", "")
	port := fs.String("port", "", "")
	fs.String("m", "", "")
	_ = fs.Parse(os.Args[1:]) // unknown flags are fine: only host and port matter
	if f := os.Getenv("FAKE_ARGV"); f != "" {
		os.WriteFile(f, []byte(strings.Join(os.Args[1:], "\n")), 0o644)
	}
	if os.Getenv("FAKE_FAIL") != "" {
		fmt.Fprintln(os.Stderr, "error: failed to load model")
		os.Exit(1)
	}
	start := time.Now()
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if time.Since(start) < 300*time.Millisecond {
			w.WriteHeader(503)
			fmt.Fprint(w, ` + "`" + `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}` + "`" + `)
			return
		}
		fmt.Fprint(w, ` + "`" + `{"status":"ok"}` + "`" + `)
	})
	http.HandleFunc("/tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Content string }
		json.NewDecoder(r.Body).Decode(&req)
		toks := make([]int, len(strings.Fields(req.Content)))
		json.NewEncoder(w).Encode(map[string]any{"tokens": toks})
	})
	fmt.Println("fake llama-server listening")
	if err := http.ListenAndServe(*host+":"+*port, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

var (
	fakeOnce sync.Once
	fakeBin  string
	fakeErr  error
)

func buildFake(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go toolchain to build the stand-in llama-server")
	}
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fake-llama-")
		if err != nil {
			fakeErr = err
			return
		}
		os.WriteFile(filepath.Join(dir, "main.go"), []byte(fakeServer), 0o644)
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module fake\n\ngo 1.22\n"), 0o644)
		fakeBin = filepath.Join(dir, "llama-server")
		cmd := exec.Command("go", "build", "-o", fakeBin, ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			fakeErr = errors.New(string(out))
		}
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	return fakeBin
}

func ggufFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "qwen3-coder-30b-a3b-q4_k_m.gguf")
	os.WriteFile(p, append([]byte("GGUF"), make([]byte, 60)...), 0o644)
	return p
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestArgsFitAn8GBGPU(t *testing.T) {
	args := strings.Join(Args(Options{Model: "m.gguf"}), " ")
	for _, want := range []string{"-m m.gguf", "--host 127.0.0.1", "--port 8080", "-c 32768", "-ngl 99", "--n-cpu-moe 99", "-fa on", "--cache-type-k q8_0", "--cache-type-v q8_0", "--jinja", "-np 1"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q: %s", want, args)
		}
	}
	// NoLayers is an explicit 0, and survives a second pass of the defaults.
	o := Options{Model: "m.gguf", GPULayers: NoLayers, CPUMoE: NoLayers}
	o.defaults()
	if args := strings.Join(Args(o), " "); !strings.Contains(args, "-ngl 0 ") || !strings.Contains(args, "--n-cpu-moe 0 ") {
		t.Errorf("NoLayers: %s", args)
	}
	args = strings.Join(Args(Options{Model: "m.gguf", Context: 65536, ExtraArgs: []string{"-ot", "exps=CPU"}}), " ")
	if !strings.Contains(args, "-c 65536") || !strings.HasSuffix(args, "-ot exps=CPU") {
		t.Errorf("args %s", args)
	}
}

func TestCheckSaysWhatToInstall(t *testing.T) {
	_, err := Check(Options{Binary: "llama-server-that-does-not-exist", Model: ggufFile(t)})
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "llama.cpp") || !strings.Contains(err.Error(), "does not download") {
		t.Errorf("missing binary: %v", err)
	}
	bin := buildFake(t)
	if _, err := Check(Options{Binary: bin, Model: "/nonexistent/model.gguf"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing model: %v", err)
	}
	notGGUF := filepath.Join(t.TempDir(), "x.gguf")
	os.WriteFile(notGGUF, []byte("<html>"), 0o644)
	if _, err := Check(Options{Binary: bin, Model: notGGUF}); err == nil || !strings.Contains(err.Error(), "not a GGUF") {
		t.Errorf("not gguf: %v", err)
	}
	if _, err := Check(Options{Binary: bin, Model: ggufFile(t), Context: 8192}); err == nil || !strings.Contains(err.Error(), "16384") {
		t.Errorf("small context: %v", err)
	}
	if _, err := Check(Options{Binary: bin}); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("no model: %v", err)
	}
}

// TestSupervisorRestartsTheServer: the real supervisor starts the stand-in,
// waits for /health (503 while loading), counts tokens, restarts the
// server after a SIGKILL, and stops it on cancellation.
func TestSupervisorRestartsTheServer(t *testing.T) {
	bin := buildFake(t)
	argv := filepath.Join(t.TempDir(), "argv")
	t.Setenv("FAKE_ARGV", argv)
	var log syncBuffer
	s, err := New(Options{Binary: bin, Model: ggufFile(t), Port: freePort(t), Log: &log, MinBackoff: 50 * time.Millisecond, LoadTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatalf("never ready: %v\n%s", err, log.String())
	}
	if n, err := s.CountTokens(ctx, "count these four words"); err != nil || n != 4 {
		t.Errorf("CountTokens = %d, %v", n, err)
	}
	got, _ := os.ReadFile(argv)
	if !strings.Contains(string(got), "--jinja") || !strings.Contains(string(got), "--n-cpu-moe") {
		t.Errorf("server argv: %s", got)
	}
	first := s.PID()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.Restarts() < 1 || s.PID() == 0 || s.PID() == first {
		if time.Now().After(deadline) {
			t.Fatalf("not restarted:\n%s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.WaitReady(ctx); err != nil {
		t.Fatalf("not ready after restart: %v", err)
	}
	if !strings.Contains(log.String(), "restarting") {
		t.Errorf("log: %s", log.String())
	}
	last := s.PID()
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
	if err := syscall.Kill(last, 0); err == nil {
		t.Errorf("llama-server (pid %d) still runs after the supervisor stopped", last)
	}
}

func TestSupervisorReportsAFailedFirstStart(t *testing.T) {
	bin := buildFake(t)
	t.Setenv("FAKE_FAIL", "1")
	s, err := New(Options{Binary: bin, Model: ggufFile(t), Port: freePort(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = s.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "before it was ready") || !strings.Contains(err.Error(), "failed to load model") {
		t.Errorf("Run = %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
