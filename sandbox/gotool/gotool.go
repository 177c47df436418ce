// Package gotool runs the go command on the host over code bcode does not
// trust: an agent's worktree, or a base commit nobody has read. Such code
// chooses what the go command reads (go.mod replace directives, cgo
// #include lines, symbolic links), what it asks the network for (module
// paths) and how much memory it spends, so every invocation here gets an
// environment of bcode's own instead of the user's:
//
//   - CGO_ENABLED=0, so no C compiler ever runs over the code (a cgo
//     `#include "/etc/shadow"` or `"/dev/zero"` is never processed);
//   - GOTOOLCHAIN=local, so a toolchain line never downloads and runs
//     another Go;
//   - GOPROXY=off, GOWORK=off, GOENV=off and GOFLAGS set by bcode alone, so
//     nothing is fetched and the user's go env file and flags do not apply;
//   - HOME, GOPATH and GOCACHE in bcode's own cache directory;
//   - on Linux, every compiler and assembler process under prlimit(1)
//     (address space and CPU time), and every command under a timeout.
//
// The one step that does reach the network, Fetch, takes module@version
// pairs the caller has already judged (known to the base commit's go.sum,
// or approved by the user), validates each, and runs in an empty directory
// with the user's proxy settings and nothing of the code at all.
package gotool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// ErrNoGo is returned when the go command cannot be found or asked for its
// environment.
var ErrNoGo = errors.New("gotool: go command unavailable")

// CacheEnv names bcode's host build cache for hostile code explicitly (by
// default it is under the user's cache directory).
const CacheEnv = "BCODE_GOTOOL_CACHE"

// Limits bound one go command and the tools it starts.
type Limits struct {
	// Timeout is the wall-clock limit of the whole command.
	Timeout time.Duration
	// MemoryBytes is the address-space limit of each compiler or assembler
	// process (RLIMIT_AS through prlimit(1); Linux only).
	MemoryBytes int64
	// CPUSeconds is the CPU-time limit of each of those processes.
	CPUSeconds int
}

// DefaultLimits are generous for real packages and small next to what a
// runaway input makes a compiler take.
var DefaultLimits = Limits{Timeout: 5 * time.Minute, MemoryBytes: 2 << 30, CPUSeconds: 120}

// Toolchain is the user's Go, resolved once, and bcode's own directories
// for running it over hostile code.
type Toolchain struct {
	Go         string // absolute path of the go binary
	GOROOT     string
	GOMODCACHE string // the user's module cache: read here, written only by Fetch
	Version    string
	// Home is bcode's HOME and GOPATH for these commands; Cache its GOCACHE.
	Home, Cache string
	// proxy holds the user's network settings, for Fetch alone.
	proxy map[string]string
}

var (
	sharedMu sync.Mutex
	shared   *Toolchain
)

// Shared is Resolve, done once for the life of the process. A failure is
// not remembered (it may have been the caller's cancelled context, or a Go
// installed since).
func Shared(ctx context.Context) (*Toolchain, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		return shared, nil
	}
	tc, err := Resolve(ctx)
	if err != nil {
		return nil, err
	}
	shared = tc
	return tc, nil
}

// proxyVars are the settings a download honours as the user made them.
// bcode never weakens them (no GOSUMDB=off, no GONOSUMDB of its own).
var proxyVars = []string{"GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOAUTH", "GOVCS"}

// Resolve finds the user's Go toolchain (the go on PATH) and the user's
// module download settings. It asks `go env` in an empty directory with
// GOTOOLCHAIN=local, so no project's go.mod or go.work is consulted.
func Resolve(ctx context.Context) (*Toolchain, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("%w: %v (install Go from https://go.dev/dl and put it on PATH)", ErrNoGo, err)
	}
	if goBin, err = filepath.Abs(goBin); err != nil {
		return nil, err
	}
	empty, err := scratch.MkdirTemp("bcode-goenv-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(empty)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := append([]string{"env", "-json", "GOROOT", "GOMODCACHE", "GOVERSION"}, proxyVars...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = empty
	cmd.Env = append(withoutVars(os.Environ(), "GOFLAGS", "GOWORK", "GOTOOLCHAIN"), "GOTOOLCHAIN=local", "GOWORK=off")
	scratch.Own(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: go env: %v: %s", ErrNoGo, err, strings.TrimSpace(stderr.String()))
	}
	var env map[string]string
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, fmt.Errorf("%w: go env: %v", ErrNoGo, err)
	}
	base := os.Getenv(CacheEnv)
	if base == "" {
		d, err := sandbox.CacheDir("gotool")
		if err != nil {
			return nil, fmt.Errorf("gotool: bcode's Go build cache (or set %s): %w", CacheEnv, err)
		}
		base = d
	}
	tc := &Toolchain{
		Go: goBin, GOROOT: env["GOROOT"], GOMODCACHE: env["GOMODCACHE"], Version: env["GOVERSION"],
		Home: filepath.Join(base, "home"), Cache: filepath.Join(base, "build"),
		proxy: map[string]string{},
	}
	for _, v := range proxyVars {
		tc.proxy[v] = env[v]
	}
	for _, d := range []string{tc.Home, tc.Cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("gotool: %w", err)
		}
	}
	return tc, nil
}

// ModFlag is the -mod mode for loading a module rooted at dir: vendor when
// it vendors its dependencies, else readonly (the go command never rewrites
// the code's go.mod or go.sum).
func ModFlag(dir string) string {
	if fi, err := os.Lstat(filepath.Join(dir, "vendor", "modules.txt")); err == nil && fi.Mode().IsRegular() {
		return "-mod=vendor"
	}
	return "-mod=readonly"
}

// OfflineEnv is the whole environment of a go command over hostile code:
// nothing of the user's but the toolchain and the module cache to read.
func (tc *Toolchain) OfflineEnv(modFlag string) []string {
	return []string{
		"PATH=" + filepath.Join(tc.GOROOT, "bin") + string(os.PathListSeparator) + "/usr/bin" + string(os.PathListSeparator) + "/bin",
		"HOME=" + tc.Home,
		"GOPATH=" + tc.Home,
		"GOCACHE=" + tc.Cache,
		"GOROOT=" + tc.GOROOT,
		"GOMODCACHE=" + tc.GOMODCACHE,
		"GOENV=off",
		"GOFLAGS=" + modFlag,
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOPROXY=off",
		"GOSUMDB=off", // nothing is fetched; the module cache was verified when it was filled
		"GOTELEMETRY=off",
		"GO111MODULE=on",
		"CGO_ENABLED=0",
		"CC=false", "CXX=false",
		"TMPDIR=" + os.TempDir(),
		"LANG=C",
	}
}

// ToolExec is the -toolexec value that puts every compiler and assembler
// the go command starts under the limits, or "" where prlimit(1) is not
// available (then only the timeout holds).
func ToolExec(l Limits) string {
	p := prlimitPath()
	if p == "" || l.MemoryBytes <= 0 {
		return ""
	}
	cpu := l.CPUSeconds
	if cpu <= 0 {
		cpu = DefaultLimits.CPUSeconds
	}
	return fmt.Sprintf("%s --as=%d --cpu=%d --core=0 --", p, l.MemoryBytes, cpu)
}

// withoutVars drops the named variables from env.
func withoutVars(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			if k == n {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
