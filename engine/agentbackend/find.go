package agentbackend

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// AgentEnv names an explicit bcode-agent binary; it wins over the search.
const AgentEnv = "BCODE_AGENT"

// ErrNoAgent: bcode-agent was not found. The message says how to get it.
var ErrNoAgent = errors.New("bcode-agent not found")

// FindAgent locates the bcode-agent binary that is mounted into the
// container: $BCODE_AGENT, else next to the running bcode binary (how a
// release installs them), else on PATH (go install puts both in GOBIN).
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
		p := filepath.Join(filepath.Dir(exe), "bcode-agent")
		looked = append(looked, p)
		if checkAgentBinary(p) == nil {
			return p, nil
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
	return "", fmt.Errorf("%w (looked at %v): build it next to bcode with 'CGO_ENABLED=0 go build -o \"$(dirname \"$(command -v bcode)\")/bcode-agent\" github.com/bcode-dev/bcode/cmd/bcode-agent', or 'CGO_ENABLED=0 go install github.com/bcode-dev/bcode/cmd/bcode-agent', or set %s to its path", ErrNoAgent, looked, AgentEnv)
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
