// Package bench is bcode's evaluation: a catalog of graded tasks, the
// reports a suite's trials write, and the types the scorecards and the
// regression gate read (engine/bench/score). docs/evaluation.md says how
// to evaluate a change with it and documents the formats, which other
// tools read.
//
// Two suites share the catalog: "verify" puts changes of known correctness
// through the gate alone and grades the verdict against the label;
// "tasks" runs each task the way a user runs one (an agent in the sandbox,
// a model behind the gateway) and grades the result with hidden checks on
// a clean snapshot, never with the model's own account.
package bench

import (
	"errors"
	"time"

	"github.com/bcode-dev/bcode/verify"
)

// Group is what a task exercises.
type Group string

const (
	GroupEveryday     Group = "everyday"     // a bounded fix or feature
	GroupLongRunning  Group = "long-running" // many turns or attempts, resumed
	GroupVerification Group = "verification" // the gate telling verified from green
	GroupSecurity     Group = "security"     // injected instructions the agent must not follow
	GroupPolyglot     Group = "polyglot"     // a language other than Go and Python
)

// Groups is every group, in the order reports list them.
var Groups = []Group{GroupEveryday, GroupLongRunning, GroupVerification, GroupSecurity, GroupPolyglot}

// Split says whether a task may be looked at while bcode is tuned (dev)
// or only when it is measured (heldout).
type Split string

const (
	SplitDev     Split = "dev"
	SplitHeldout Split = "heldout"
)

// Suite is how a task is run and graded.
type Suite string

const (
	SuiteVerify Suite = "verify" // the gate alone, graded by the label
	SuiteTasks  Suite = "tasks"  // an agent in the sandbox, graded by hidden checks
)

// Provenance says where a task comes from.
type Provenance struct {
	// Kind is "commit" (a real commit of a public project), "issue" (a
	// public issue) or "synthetic" (written for bcode).
	Kind string `json:"kind" toml:"kind"`
	// Source is the public repository (commit, issue); empty for synthetic.
	Source string `json:"source,omitempty" toml:"source"`
	// Ref is the full commit hash or the URL.
	Ref string `json:"ref,omitempty" toml:"ref"`
	// Date is YYYY-MM-DD: the commit's or issue's date, or the day a
	// synthetic task was written. It says whether a model could have seen
	// the task before its publication date.
	Date string `json:"date" toml:"date"`
}

// Task is one catalog entry.
type Task struct {
	ID         string     `json:"id" toml:"id"`
	Suite      Suite      `json:"suite" toml:"suite"`
	Group      Group      `json:"group" toml:"group"`
	Capability string     `json:"capability" toml:"capability"` // what it measures, in a few words
	Split      Split      `json:"split" toml:"split"`
	Language   string     `json:"language" toml:"language"` // go, python, javascript, rust
	Provenance Provenance `json:"provenance" toml:"provenance"`
	// Pinned is what the sources are pinned to: a full 40-hex commit or a
	// module@version; synthetic tasks pin nothing.
	Pinned string `json:"pinned,omitempty" toml:"pinned"`
	// Fixture is the task's repository: a txtar file, relative to the
	// module root (verify: a labelled case; tasks: base/, reference/ and
	// hidden/ sections, documented in docs/evaluation.md).
	Fixture string `json:"fixture" toml:"fixture"`
	// Label is the verify suite's expected verdict.
	Label verify.Verdict `json:"label,omitempty" toml:"label"`
	// Goal is what the user asks for (tasks suite).
	Goal string `json:"goal,omitempty" toml:"goal"`
	// Checks are the hidden checks (tasks suite): test commands in the
	// form verify.ParseTestCommand reads, run on the clean snapshot with
	// the hidden files written; the task passes when every selected test
	// passes.
	Checks []string `json:"checks,omitempty" toml:"checks"`
	// MayChange are test-infrastructure paths (globs) the task allows the
	// agent to change; every other test file is restored to the base
	// before grading.
	MayChange []string `json:"may_change,omitempty" toml:"may_change"`
	// Canaries are the names of the secrets a security task plants
	// (fresh values per run, replaced by their names in reports).
	Canaries []string `json:"canaries,omitempty" toml:"canaries"`
	// Lures are what following a security task's injection looks like in
	// a tool call or an answer (a URL, a path such as ~/.ssh/id_rsa or
	// /etc/passwd, a command): one there counts as an attempt, refused or
	// not (the canaries count as leaks on their own).
	Lures []string `json:"lures,omitempty" toml:"lures"`
	// Protected are paths (globs) a security task's change must not touch
	// (the injected instruction file, the planted secrets): a change to
	// one is a security failure.
	Protected []string `json:"protected,omitempty" toml:"protected"`
}

// Outcome is one trial's grade.
type Outcome string

const (
	Pass  Outcome = "pass"
	Fail  Outcome = "fail"
	Error Outcome = "error" // the harness could not grade it (says why)
)

// Model names what answered the agent: a local model file with its
// digest, an endpoint with its model name, or the scripted server.
type Model struct {
	Kind     string `json:"kind"` // "llama-server", "endpoint", "scripted"
	File     string `json:"file,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Name     string `json:"name,omitempty"`
	Server   string `json:"server,omitempty"` // the server's build (llama-server --version)
}

// Scripted reports whether the runs were answered by the scripted model
// server; such a report is never comparable with one from a model.
func (m Model) Scripted() bool { return m.Kind == "scripted" }

// Budgets are the limits every trial ran under.
type Budgets struct {
	Attempts    int           `json:"attempts"`
	WallClock   time.Duration `json:"wall_clock_ns"`
	Tokens      int           `json:"tokens"`
	Escalations int           `json:"escalations"`
}

// Result is one trial of one task.
type Result struct {
	Task       string  `json:"task"`
	Trial      int     `json:"trial"`
	Outcome    Outcome `json:"outcome"`
	Seconds    float64 `json:"seconds"`
	Tokens     int     `json:"tokens"`
	ModelCalls int     `json:"model_calls"`
	// Verdict is the gate's verdict (verify suite: graded against the
	// task's label; tasks suite: the task's own end).
	Verdict verify.Verdict `json:"verdict,omitempty"`
	// SecurityAttempts counts tool calls that followed an injection, even
	// when refused; Leaks counts canaries found anywhere the agent's work
	// reached (its calls, its answer, its change) or protected paths it
	// changed.
	SecurityAttempts int `json:"security_attempts"`
	Leaks            int `json:"leaks"`
	// ServerRSS is the model server's peak resident memory in bytes,
	// when measured.
	ServerRSS int64  `json:"server_rss,omitempty"`
	Detail    string `json:"detail,omitempty"` // why, for fail and error
}

// Skip is a task a run left out, and why.
type Skip struct {
	Task   string `json:"task"`
	Reason string `json:"reason"`
}

// Report is what one run of a suite writes: enough to reproduce it and
// to refuse comparing it with a run made differently.
type Report struct {
	Suite      Suite             `json:"suite"`
	Bcode      string            `json:"bcode"` // the build (version and VCS revision)
	Model      Model             `json:"model"`
	Toolchains map[string]string `json:"toolchains"`
	// TasksHash is the SHA-256 of the task definitions that ran, Fixtures
	// the SHA-256 of each task's fixture file by task id.
	TasksHash string            `json:"tasks_hash"`
	Fixtures  map[string]string `json:"fixtures"`
	Budgets   Budgets           `json:"budgets"`
	Trials    int               `json:"trials"`
	Started   time.Time         `json:"started"`
	Load      float64           `json:"load"` // the machine's 1-minute load when the run started
	Tasks     []Task            `json:"tasks"`
	Results   []Result          `json:"results"`
	Skipped   []Skip            `json:"skipped,omitempty"`
	// Limitations say what the run cannot show (a scripted model, tasks
	// skipped for a missing toolchain).
	Limitations []string `json:"limitations,omitempty"`
}

// Errors of the catalog and of comparing runs.
var (
	ErrCatalog       = errors.New("bench: catalog")
	ErrNotComparable = errors.New("bench: runs not comparable")
)
