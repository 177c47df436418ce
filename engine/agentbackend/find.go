package agentbackend

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
)

// AgentEnv names an explicit bcode-agent binary; it wins over the search.
const AgentEnv = "BCODE_AGENT"

// ErrNoAgent: bcode-agent was not found. The message says how to get it.
var ErrNoAgent = errors.New("bcode-agent not found")

// InstallHint is the one command that installs everything a task needs
// from a checkout of bcode: bcode, bcode-ls and, next to
// them, bcode-agent. The agent is a Linux binary run in the container and
// has no cgo dependency, so on Linux this is the whole setup; on macOS the
// agent is cross-built into GOPATH/bin/linux_ARCH, where FindAgent looks.
const InstallHint = "go install ./cmd/..."

// FindAgent locates the bcode-agent binary that is mounted into the
// container: $BCODE_AGENT, else next to the running bcode binary (how
// `go install ./cmd/...` and a release install them), else in linux_ARCH
// beside it (where `GOOS=linux go install` puts a cross-built agent on
// macOS), else on PATH.
func FindAgent() (string, error) {
	if p := os.Getenv(AgentEnv); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %w", AgentEnv, p, err)
		}
		if err := checkAgentBinary(abs); err != nil {
			return "", fmt.Errorf("%s=%q: %w", AgentEnv, p, err)
		}
		return abs, nil
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		for _, p := range []string{
			filepath.Join(filepath.Dir(exe), "bcode-agent"),
			filepath.Join(filepath.Dir(exe), "linux_"+runtime.GOARCH, "bcode-agent"),
		} {
			looked = append(looked, p)
			if checkAgentBinary(p) == nil {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath("bcode-agent"); err == nil {
		if abs, err := filepath.Abs(p); err == nil && checkAgentBinary(abs) == nil {
			return abs, nil
		}
		looked = append(looked, p)
	} else {
		looked = append(looked, "$PATH")
	}
	return "", fmt.Errorf("%w (looked at %v): %s", ErrNoAgent, looked, installFix())
}

// installFix says how to get a bcode-agent that matches this bcode.
func installFix() string {
	fix := "install it with bcode, from bcode's checkout: '" + InstallHint + "'"
	if runtime.GOOS != "linux" {
		fix += ", then 'GOOS=linux CGO_ENABLED=0 go install ./cmd/bcode-agent' (the agent runs in a Linux container)"
	}
	return fix + "; or set " + AgentEnv + " to a bcode-agent built for Linux"
}

// ErrAgentMismatch: the bcode-agent found was built from other sources than
// the running bcode, so the two may not speak the same protocol.
var ErrAgentMismatch = errors.New("bcode-agent does not match bcode")

// AgentVersion is what a binary's build information says it was built
// from: the module version and, when built from a checkout, the commit
// and whether the tree had uncommitted changes.
type AgentVersion struct {
	Module   string
	Version  string
	Revision string
	Modified bool
}

func (v AgentVersion) String() string {
	s := v.Version
	if v.Revision != "" {
		s += " (commit " + v.Revision
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

func versionOf(bi *debug.BuildInfo) AgentVersion {
	v := AgentVersion{Module: bi.Main.Path, Version: bi.Main.Version}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// CheckAgentVersion reads the build information of the bcode-agent at path
// (without running it: it is a Linux binary and this may be macOS) and
// compares it with the running binary's. It returns the agent's version,
// and ErrAgentMismatch, with the fix, when they were built from different
// sources. A running binary with no build information to compare (a test
// binary) accepts any agent of bcode's module.
func CheckAgentVersion(path string) (AgentVersion, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return AgentVersion{}, fmt.Errorf("%w: %s has no Go build information (%v): %s", ErrAgentMismatch, path, err, installFix())
	}
	agent := versionOf(bi)
	const mod = "github.com/bcode-dev/bcode"
	if agent.Module != mod {
		return agent, fmt.Errorf("%w: %s is from module %q, not %s: %s", ErrAgentMismatch, path, agent.Module, mod, installFix())
	}
	self, ok := debug.ReadBuildInfo()
	if !ok || self.Main.Path != mod {
		return agent, nil
	}
	own := versionOf(self)
	if own.Version == "(devel)" && own.Revision == "" {
		return agent, nil
	}
	if agent.Version != own.Version || agent.Revision != own.Revision {
		return agent, fmt.Errorf("%w: %s is %s, bcode is %s: %s", ErrAgentMismatch, path, agent, own, installFix())
	}
	return agent, nil
}

// checkAgentBinary accepts a regular, executable Linux ELF file: it runs
// inside the container, so a macOS or Windows build would only fail there,
// later and less clearly.
func checkAgentBinary(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("bcode-agent path %q is not absolute", p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoAgent, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not an executable file", ErrNoAgent, p)
	}
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%w: %s is not a Linux executable (%v); build it with GOOS=linux CGO_ENABLED=0", ErrNoAgent, p, err)
	}
	defer f.Close()
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return fmt.Errorf("%w: %s is not a Linux executable (OS ABI %v)", ErrNoAgent, p, f.OSABI)
	}
	return nil
}
