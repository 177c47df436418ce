package suite

import (
	"context"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/sandbox"
)

// newVerifyReport is a verify run's report before its results: what ran
// it (bcode's build, the toolchains), what it ran (the hashes of the
// task definitions and fixtures) and under what (trials, load).
func newVerifyReport(ctx context.Context, o VerifyOptions, tasks []bench.Task) (*bench.Report, error) {
	fixtures, err := bench.FixtureHashes(o.Root, tasks)
	if err != nil {
		return nil, err
	}
	return &bench.Report{
		Suite:      bench.SuiteVerify,
		Bcode:      BcodeBuild(),
		Model:      bench.Model{Kind: "none", Name: "the verify suite runs the gate alone"},
		Toolchains: ProbeToolchains(ctx),
		TasksHash:  bench.TasksHash(tasks),
		Fixtures:   fixtures,
		// The gate's own budgets: one check per trial, no model.
		Budgets: bench.Budgets{Attempts: 1},
		Trials:  o.Trials,
		Started: time.Now().UTC(),
		Load:    sandbox.ReadLoad().Avg1,
		Tasks:   tasks,
		Limitations: []string{
			"the gate alone on labelled changes: no agent, no model; it measures verdicts, not task success",
			"tests run on the host runner (bcode check's default), not in the Docker sandbox",
		},
	}, nil
}

// BcodeBuild is this binary's build: the module version and, when the
// binary was built from a checkout, its VCS revision, time and whether
// the tree had uncommitted changes.
func BcodeBuild() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	parts := []string{info.Main.Path + "@" + info.Main.Version, info.GoVersion}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.time":
			parts = append(parts, s.Key+"="+s.Value)
		case "vcs.modified":
			if s.Value == "true" {
				parts = append(parts, "vcs.modified")
			}
		}
	}
	if !strings.Contains(strings.Join(parts, " "), "vcs.revision=") {
		// Reports of such builds cannot say which bcode ran.
		parts = append(parts, "(no VCS revision: built with -buildvcs=false or outside git)")
	}
	return strings.Join(parts, " ")
}

// toolchainProbes are the commands whose first output line is each
// toolchain's version.
var toolchainProbes = map[string][]string{
	"go":     {"go", "version"},
	"python": {"python3", "--version"},
	"pytest": {"python3", "-m", "pytest", "--version"},
	"cargo":  {"cargo", "--version"},
	"node":   {"node", "--version"},
	"git":    {"git", "--version"},
}

// ProbeToolchains is the version of each toolchain the suites use, or
// "missing: …" saying why not.
func ProbeToolchains(ctx context.Context) map[string]string {
	out := map[string]string{}
	for name, argv := range toolchainProbes {
		out[name] = probe(ctx, argv)
	}
	if strings.HasPrefix(out["pytest"], "missing") {
		// The gate falls back to Debian's interpreter (python.New("")).
		if v := probe(ctx, []string{"/usr/bin/python3", "-m", "pytest", "--version"}); !strings.HasPrefix(v, "missing") {
			out["pytest"] = v + " (/usr/bin/python3)"
		}
	}
	return out
}

func probe(ctx context.Context, argv []string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return "missing: " + strings.Join(argv, " ") + ": " + firstLine(string(b)+" "+err.Error())
	}
	return firstLine(string(b))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// toolchainMissing says why a task of lang cannot run here, "" when it can.
func toolchainMissing(lang string) string {
	switch lang {
	case "go":
		if _, err := exec.LookPath("go"); err != nil {
			return "go is not on PATH (install Go from https://go.dev/dl)"
		}
	case "python":
		for _, py := range []string{"python3", "/usr/bin/python3"} {
			if exec.Command(py, "-m", "pytest", "--version").Run() == nil {
				return ""
			}
		}
		return "no python3 can import pytest (apt-get install python3-pytest)"
	case "rust":
		if _, err := exec.LookPath("cargo"); err != nil {
			return "cargo is not on PATH (install Rust from https://rustup.rs)"
		}
	case "javascript":
		if _, err := exec.LookPath("node"); err != nil {
			return "node is not on PATH (apt-get install nodejs)"
		}
	}
	return ""
}
