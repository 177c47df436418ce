package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Mount is a host directory (or file) shown read-only in the container at
// the same path.
type Mount struct {
	Source string
	Target string // empty: same as Source
}

func (m Mount) target() string {
	if m.Target == "" {
		return m.Source
	}
	return m.Target
}

// GoEnv is what the host's go command says about itself.
type GoEnv struct {
	GOROOT     string
	GOMODCACHE string
	GOCACHE    string
	GOVERSION  string
}

// HostGoEnv asks the host's go (first on PATH) for its GOROOT and module
// cache, with the caller's own environment: these are the user's settings.
func HostGoEnv(ctx context.Context) (GoEnv, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "-json", "GOROOT", "GOMODCACHE", "GOCACHE", "GOVERSION").Output()
	if err != nil {
		return GoEnv{}, fmt.Errorf("go env: %w (install Go from https://go.dev/dl and put it on PATH)", err)
	}
	var g GoEnv
	if err := json.Unmarshal(out, &g); err != nil {
		return GoEnv{}, fmt.Errorf("go env: %w", err)
	}
	return g, nil
}

// HostRustSysroot is the host's Rust toolchain as its rustc (first on
// PATH, with the caller's environment: rustup's choice of toolchain is the
// user's) says: the directory holding bin/cargo and bin/rustc and their
// libraries. "" when there is no rustc.
func HostRustSysroot(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "rustc", "--print", "sysroot").Output()
	if err != nil {
		return ""
	}
	p := filepath.Clean(strings.TrimSpace(string(out)))
	if !filepath.IsAbs(p) {
		return ""
	}
	if fi, err := os.Stat(filepath.Join(p, "bin", "cargo")); err != nil || fi.IsDir() {
		return "" // rustc without cargo: nothing to run tests with
	}
	return p
}

// RustTarget is where a host Rust sysroot outside /usr appears in the
// container: not at its host path, which is usually in the user's home
// (~/.rustup), whose name the container has no business seeing. A
// toolchain finds its libraries from its own binaries' place, so it runs
// from there.
const RustTarget = "/opt/bcode/rust"

// rustMount is the mount of the Rust sysroot, and the sysroot's path in the
// container ("" none): nothing when a mount covers it already (Debian's
// cargo lives under /usr, on PATH there).
func rustMount(ms []Mount, sysroot string) ([]Mount, string) {
	if sysroot == "" {
		return ms, ""
	}
	for _, m := range ms {
		if sysroot == m.target() || strings.HasPrefix(sysroot, m.target()+"/") {
			return ms, ""
		}
	}
	return append(ms, Mount{Source: sysroot, Target: RustTarget}), RustTarget
}

// HostToolchains lists the read-only mounts that give the container the
// host's toolchains: /usr (the system's shell, coreutils, git, python3 and
// its site packages, and a GOROOT below /usr), the top-level directories a
// non-merged-/usr host keeps outside it, /etc/alternatives (links into
// /usr), and a GOROOT elsewhere. Never the
// host's Go module cache, which holds every project's modules: the
// container gets a view of the task's own (Config.ModCache).
func HostToolchains(g GoEnv) []Mount {
	ms := []Mount{{Source: "/usr"}}
	for _, d := range usrDirs {
		if _, ok := hostUsrLink(d); ok {
			continue // the image has the same link into /usr
		}
		if fi, err := os.Stat("/" + d); err == nil && fi.IsDir() {
			ms = append(ms, Mount{Source: "/" + d})
		}
	}
	covered := func(p string) bool {
		for _, m := range ms {
			if p == m.target() || strings.HasPrefix(p, m.target()+"/") {
				return true
			}
		}
		return false
	}
	// Debian names its compilers (cc, c++) and many tools through links in
	// /etc/alternatives, which point back into /usr: without them /usr/bin/cc
	// is a dangling link in the container, and cargo cannot link a test.
	if fi, err := os.Stat("/etc/alternatives"); err == nil && fi.IsDir() {
		ms = append(ms, Mount{Source: "/etc/alternatives"})
	}
	if p := filepath.Clean(g.GOROOT); g.GOROOT != "" {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() && !covered(p) {
			ms = append(ms, Mount{Source: p})
		}
	}
	return ms
}

// containerPath is the PATH inside the container: the Go toolchain first
// (when goroot is known), then the Rust one (when its sysroot is), then
// the usual system directories.
func containerPath(goroot, rust string) string {
	p := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if rust != "" {
		p = rust + "/bin:" + p
	}
	if goroot != "" {
		p = goroot + "/bin:" + p
	}
	return p
}

// ModCacheTarget is where Config.ModCache appears in the container, as its
// GOMODCACHE. Without a view GOMODCACHE is an empty directory in the home
// tmpfs, and every module is missing.
const ModCacheTarget = "/opt/bcode/gomodcache"

// baseEnv is the whole environment a command starts from: nothing of the
// caller's, only what the sandbox sets. Go runs offline against the
// read-only module view (modcache: its path in the container); a missing
// module fails fast (see ExplainOffline).
func baseEnv(g GoEnv, rust, gocache, modcache string) []string {
	env := []string{
		"PATH=" + containerPath(g.GOROOT, rust),
		"HOME=" + Home,
		"USER=sandbox",
		"LOGNAME=sandbox",
		"LANG=C.UTF-8",
		"TMPDIR=/tmp",
		"GOPATH=" + Home + "/go",
		"GOCACHE=" + gocache,
		"GOPROXY=off",
		"GOFLAGS=-mod=mod",
		"GOTOOLCHAIN=local",
		// Every module in the view was verified against the checksum
		// database when the host downloaded it; inside, there is nothing
		// to ask and nothing new to verify.
		"GOSUMDB=off",
		"GOMODCACHE=" + modcache,
		"GOTELEMETRY=off",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
		"PIP_NO_INDEX=1",
	}
	if g.GOROOT != "" {
		env = append(env, "GOROOT="+g.GOROOT)
	}
	return env
}

// mergeEnv applies extra over base; later entries win, order is kept.
func mergeEnv(base, extra []string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range append(append([]string(nil), base...), extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}
