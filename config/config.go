// Package config reads .bcode/config.toml. Verification always reads it from
// the base commit, never from the head, so a change cannot weaken the rules
// it is judged by; this package parses and validates bytes, and FromBase is
// the one way every caller (the gate, task creation, the runner) turns the
// base commit's file into a Config.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Path is where the configuration lives in a repository.
const Path = ".bcode/config.toml"

// Config is the whole of .bcode/config.toml.
type Config struct {
	Gate     Gate     `toml:"gate"`
	Evidence Evidence `toml:"evidence"`
	Model    Model    `toml:"model"`
	Task     Task     `toml:"task"`
	Sandbox  Sandbox  `toml:"sandbox"`
	Python   Python   `toml:"python"`
	Verify   Verify   `toml:"verify"`
}

// Verify says how much evidence `verified` needs.
type Verify struct {
	// Level is the verification level a change must reach to be
	// verified: "V1" (the oracle or credited tests flip from fail to
	// pass, every flake run agreeing), "V2" (V1 and no pass-to-pass
	// regression; the default) or "V3" (V2 and the head's whole suite
	// passes).
	Level string `toml:"level"`
}

// Verification levels, weakest first.
const (
	LevelV1 = "V1"
	LevelV2 = "V2"
	LevelV3 = "V3"
	// DefaultLevel is what `verified` needs when the base sets none.
	DefaultLevel = LevelV2
)

// Python tunes how the gate starts Python on a snapshot.
type Python struct {
	// StartupFiles lets the snapshot's sitecustomize.py and
	// usercustomize.py (at its root or in src/) run in pytest's process
	// and the processes tests start; a change to them is then test
	// infrastructure. Off by default: no file of the snapshot runs before
	// pytest has loaded (verify/python).
	StartupFiles bool `toml:"startup_files"`
}

// Gate tunes `bcode check`.
type Gate struct {
	// FlakeRuns is how many times each credited test runs on each side.
	FlakeRuns int `toml:"flake_runs"`
	// TestTimeout bounds one batch of targeted test runs.
	TestTimeout Duration `toml:"test_timeout"`
	// SuiteTimeout bounds the full suite.
	SuiteTimeout Duration `toml:"suite_timeout"`
	// Protected lists globs (with **) of paths a change must not touch.
	Protected []string `toml:"protected"`
	// Python is the interpreter that runs pytest and the AST helper.
	Python string `toml:"python"`
	// SkipFullSuite runs only the targeted suite (large repositories).
	SkipFullSuite bool `toml:"skip_full_suite"`
	// AllowChangedExpectations says whether a change may rewrite what an
	// existing test pinned (the base's version of a test fails against the
	// head) and still be verified. Unset: an agent's task is tampered; a
	// person's change (`bcode check`) whose rewritten test itself fails on
	// the base and passes on the head is green with the rewrite named, for
	// review (tests cannot tell a fix of what the old test pinned from a
	// change of it); true: verified; false: tampered for both.
	AllowChangedExpectations *bool `toml:"allow_changed_expectations"`
	// AllowSubmoduleUpdates lets a change move an existing submodule to
	// another commit (a gitlink the base already has) and still be
	// verified. Off by default: a gitlink is what git enters as a
	// repository of its own. Accept lists the move either way, and a new
	// submodule or a .gitmodules change is never allowed by it.
	AllowSubmoduleUpdates bool `toml:"allow_submodule_updates"`
	// InfrastructureChanges says what a change to CI definitions (a
	// workflow, .travis.yml, .circleci/) does to the verdict: "findings"
	// shows them beside what the tests established, "block" makes the
	// change tampered. Unset: a person's change (bcode check, the editor's
	// check) gets findings, an agent's task is blocked.
	InfrastructureChanges string `toml:"infrastructure_changes"`
}

// The values of gate.infrastructure_changes.
const (
	InfrastructureFindings = "findings"
	InfrastructureBlock    = "block"
)

// BlocksInfrastructure says whether a change to CI definitions keeps the
// change from being verified: the base's gate.infrastructure_changes, or,
// unset, whether the change is an agent's task.
func (g Gate) BlocksInfrastructure(agentTask bool) bool {
	switch g.InfrastructureChanges {
	case InfrastructureFindings:
		return false
	case InfrastructureBlock:
		return true
	}
	return agentTask
}

// Evidence tunes mutation evidence.
type Evidence struct {
	// MaxSurvivors blocks `verified` when more mutants survive; -1: never.
	MaxSurvivors int `toml:"max_survivors"`
	// Workers is the number of mutants run at once (0: number of CPUs).
	Workers int `toml:"workers"`
	// CompileTimeout and RunTimeout are separate budgets. RunTimeout caps
	// each mutant's run, wall-clock time included; below it, a mutant's
	// budget is CPU time derived from its tests' baseline time.
	CompileTimeout Duration `toml:"compile_timeout"`
	RunTimeout     Duration `toml:"run_timeout"`
	// PythonIsolation is how Python mutants are kept apart: "state" (the
	// default: several mutants per forked worker child, a new child after
	// any run that changed module or process state the worker watches) or
	// "fork" (a forked child per mutant: slower, for suites whose tests
	// leave state the watch cannot see).
	PythonIsolation string `toml:"python_isolation"`
}

// Model says where model calls go.
type Model struct {
	Endpoint string `toml:"endpoint"`
	Name     string `toml:"name"`
	// MinContext refuses models whose context window is smaller.
	MinContext int `toml:"min_context"`
	// Frontier escalation is off unless the user turns it on.
	FrontierEndpoint string `toml:"frontier_endpoint"`
	FrontierModel    string `toml:"frontier_model"`
	FrontierKeyEnv   string `toml:"frontier_key_env"`
}

// Task holds the budgets that park a task as blocked when spent, and the
// caps on what a checkpoint commit takes in from the agent's worktree.
type Task struct {
	MaxAttempts int      `toml:"max_attempts"`
	MaxTurns    int      `toml:"max_turns"`
	MaxTokens   int      `toml:"max_tokens"`
	WallClock   Duration `toml:"wall_clock"`
	// MaxFileBytes: a worktree file larger than this is left out of the
	// checkpoint (and reported) instead of being hashed into the object
	// store; a 4 GiB sparse file costs nothing to make and minutes to hash.
	MaxFileBytes int64 `toml:"max_file_bytes"`
	// MaxCheckpointBytes bounds what one checkpoint hashes in all; files
	// past it are left out and reported.
	MaxCheckpointBytes int64 `toml:"max_checkpoint_bytes"`
}

// Checkpoint caps used when the base's configuration sets none.
const (
	DefaultMaxFileBytes       = 64 << 20  // 64 MiB
	DefaultMaxCheckpointBytes = 512 << 20 // 512 MiB
)

// Sandbox configures where agent work runs.
type Sandbox struct {
	Image    string `toml:"image"`
	MemoryMB int    `toml:"memory_mb"`
	CPUs     int    `toml:"cpus"`
	Pids     int    `toml:"pids"`
	// DiskMB is the size of the filesystem a task's worktree (and the
	// gate's scratch directory) is put on while sandboxed commands run:
	// writes beyond it fail with "no space left on device" inside the
	// container (docs/sandbox.md, "Boundary: what it can spend").
	DiskMB int `toml:"disk_mb"`
}

// Duration is a time.Duration written as "90s" or "5m" in TOML.
type Duration struct{ time.Duration }

// UnmarshalText parses "5m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("bad duration %q (use e.g. \"90s\" or \"5m\")", b)
	}
	if v < 0 {
		return fmt.Errorf("bad duration %q: negative", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes "5m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// Model defaults, here once: the gateway, llama-server's wrapper and the
// surfaces' messages use these names.
const (
	// DefaultEndpoint is llama-server's own default address.
	DefaultEndpoint = "http://127.0.0.1:8080"
	// DefaultMinContext is the smallest context window a task may run with:
	// below it a model cannot hold a file, a test run and its own plan.
	DefaultMinContext = 16384
)

// Sandbox defaults. sandbox/docker cannot import this package (nor this
// one it), so it has its own constants for the same values, and its test
// TestDefaultsAgreeWithConfig holds them equal.
const (
	DefaultSandboxImage    = "bcode-sandbox:latest"
	DefaultSandboxMemoryMB = 4096
	DefaultSandboxCPUs     = 2
	DefaultSandboxPids     = 512
	DefaultSandboxDiskMB   = 2048
	// MinSandboxDiskMB: below it a checkout and its build outputs hardly
	// fit, and the limit cannot be turned off by setting it to zero.
	MinSandboxDiskMB = 64
)

// DefaultCompileTimeout bounds each build of evidence ([evidence]
// compile_timeout); verify/mutate uses it when its options set none.
const DefaultCompileTimeout = 5 * time.Minute

// DefaultProtected are paths no change may touch unless the base's
// configuration says otherwise: bcode's own settings.
var DefaultProtected = []string{".bcode/**"}

// Default is the configuration used when the base has no config file.
func Default() Config {
	return Config{
		Gate: Gate{
			FlakeRuns:    3,
			TestTimeout:  Duration{5 * time.Minute},
			SuiteTimeout: Duration{20 * time.Minute},
			Protected:    append([]string(nil), DefaultProtected...),
		},
		Evidence: Evidence{
			MaxSurvivors:   -1,
			CompileTimeout: Duration{DefaultCompileTimeout},
			RunTimeout:     Duration{10 * time.Minute},
		},
		Model: Model{
			Endpoint:   DefaultEndpoint,
			MinContext: DefaultMinContext,
		},
		Task: Task{
			MaxAttempts: 3,
			MaxTurns:    40,
			MaxTokens:   400000,
			WallClock:   Duration{2 * time.Hour},

			MaxFileBytes:       DefaultMaxFileBytes,
			MaxCheckpointBytes: DefaultMaxCheckpointBytes,
		},
		Verify: Verify{Level: DefaultLevel},
		Sandbox: Sandbox{
			Image:    DefaultSandboxImage,
			MemoryMB: DefaultSandboxMemoryMB,
			CPUs:     DefaultSandboxCPUs,
			Pids:     DefaultSandboxPids,
			DiskMB:   DefaultSandboxDiskMB,
		},
	}
}

// FromBase is the base commit's configuration: Path as readBase reads it
// at the base (an error wrapping fs.ErrNotExist: no file, the defaults),
// parsed over the defaults. The head's copy never counts, so a change
// cannot loosen the rules it is judged by.
func FromBase(readBase func(path string) ([]byte, error)) (Config, error) {
	data, err := readBase(Path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("reading %s at the base: %w", Path, err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("the base commit's %w", err)
	}
	return cfg, nil
}

// Parse reads a config file's bytes over the defaults. Unknown keys are an
// error, so a typo never silently turns a rule off.
func Parse(data []byte) (Config, error) {
	c := Default()
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var sme *toml.StrictMissingError
		if errors.As(err, &sme) {
			return Config{}, fmt.Errorf("%s: %s", Path, strings.TrimSpace(sme.String()))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return Config{}, fmt.Errorf("%s:%d:%d: %s", Path, row, col, describeDecodeError(de))
		}
		return Config{}, fmt.Errorf("%s: %w", Path, err)
	}
	if err := c.validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", Path, err)
	}
	return c, nil
}

func (c *Config) validate() error {
	if c.Gate.FlakeRuns < 1 || c.Gate.FlakeRuns > 50 {
		return fmt.Errorf("gate.flake_runs = %d: must be between 1 and 50", c.Gate.FlakeRuns)
	}
	switch c.Gate.InfrastructureChanges {
	case "", InfrastructureFindings, InfrastructureBlock:
	default:
		return fmt.Errorf("gate.infrastructure_changes = %q: use %q or %q", c.Gate.InfrastructureChanges, InfrastructureFindings, InfrastructureBlock)
	}
	if c.Evidence.MaxSurvivors < -1 {
		return fmt.Errorf("evidence.max_survivors = %d: use -1 for no limit", c.Evidence.MaxSurvivors)
	}
	switch c.Verify.Level {
	case LevelV1, LevelV2, LevelV3:
	default:
		return fmt.Errorf("verify.level = %q: use \"V1\", \"V2\" or \"V3\"", c.Verify.Level)
	}
	switch c.Evidence.PythonIsolation {
	case "", "state", "fork":
	default:
		return fmt.Errorf("evidence.python_isolation = %q: use \"state\" or \"fork\"", c.Evidence.PythonIsolation)
	}
	if c.Sandbox.DiskMB < MinSandboxDiskMB {
		return fmt.Errorf("sandbox.disk_mb = %d: must be at least %d (MiB)", c.Sandbox.DiskMB, MinSandboxDiskMB)
	}
	if c.Task.MaxFileBytes < 1 {
		return fmt.Errorf("task.max_file_bytes = %d: must be at least 1", c.Task.MaxFileBytes)
	}
	if c.Task.MaxCheckpointBytes < c.Task.MaxFileBytes {
		return fmt.Errorf("task.max_checkpoint_bytes = %d: must be at least task.max_file_bytes (%d)", c.Task.MaxCheckpointBytes, c.Task.MaxFileBytes)
	}
	for _, p := range c.Gate.Protected {
		if _, err := path.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil || p == "" {
			return fmt.Errorf("gate.protected: bad glob %q", p)
		}
	}
	return nil
}

// IsProtected reports whether path matches one of the protected globs.
func (c *Config) IsProtected(p string) (string, bool) {
	for _, g := range c.Gate.Protected {
		if MatchGlob(g, p) {
			return g, true
		}
	}
	return "", false
}

// MatchGlob matches a slash-separated path against a glob where "*" and "?"
// stay inside one path element and "**" spans any number of them. A pattern
// without a slash matches the base name anywhere ("*.pem"), as in gitignore.
func MatchGlob(pattern, p string) bool {
	pattern = strings.TrimPrefix(pattern, "/")
	if !strings.Contains(pattern, "/") && pattern != "**" {
		ok, _ := path.Match(pattern, path.Base(p))
		return ok
	}
	return matchParts(strings.Split(pattern, "/"), strings.Split(p, "/"))
}

func matchParts(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(parts); i++ {
				if matchParts(rest, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// wrongType is go-toml's message for a value of the wrong type, which
// names the Go struct field; users know the TOML key.
var wrongType = regexp.MustCompile(`cannot decode TOML (\w+) into struct field \S+ of type (\S+)`)

// describeDecodeError says what is wrong in the config file's own terms:
// the dotted key and the kind of value it takes.
func describeDecodeError(de *toml.DecodeError) string {
	key := strings.Join(de.Key(), ".")
	m := wrongType.FindStringSubmatch(de.Error())
	if key == "" || m == nil {
		return de.Error()
	}
	want := map[string]string{
		"string": "a string", "bool": "true or false", "[]string": "an array of strings",
		"float64": "a number", "config.Duration": `a duration such as "90s" or "5m"`,
	}[m[2]]
	switch {
	case want != "":
	case strings.HasPrefix(m[2], "int") || strings.HasPrefix(m[2], "uint"):
		want = "an integer"
	case strings.HasPrefix(m[2], "config."):
		want = "a table"
	default:
		return de.Error()
	}
	got := m[1]
	if got == "integer" || got == "array" {
		got = "an " + got
	} else {
		got = "a " + got
	}
	return fmt.Sprintf("%s must be %s, not %s", key, want, got)
}
