package attest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Where a predicate's toolchain versions were read.
const (
	ToolchainsFromCheck  = "check"  // the check report recorded them
	ToolchainsFromExport = "export" // read on the exporting machine
)

// toolchainTimeout bounds each version query.
const toolchainTimeout = 10 * time.Second

// toolchainQueries are the version commands of the toolchains the gate
// runs tests with.
var toolchainQueries = map[string][]string{
	"go":     {"go", "version"},
	"python": {"python3", "--version"},
	"node":   {"node", "--version"},
	"cargo":  {"cargo", "--version"},
}

// HostToolchains reads the versions of the toolchains on this machine's
// PATH (the sandbox mounts the host's /usr, so they are the sandbox's
// too); a toolchain that is missing or does not answer is left out. The
// queries run in / with GOTOOLCHAIN=local, so no go.mod or
// rust-toolchain file can make them download a toolchain.
func HostToolchains(ctx context.Context) map[string]string {
	out := map[string]string{}
	for name, argv := range toolchainQueries {
		if v := queryVersion(ctx, argv); v != "" {
			out[name] = v
		}
	}
	return out
}

func queryVersion(ctx context.Context, argv []string) string {
	cctx, cancel := context.WithTimeout(ctx, toolchainTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if cmd.Run() != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(stdout.String()), "\n")
	return line
}
