package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine/bench"
)

// newTasksReport is the report of a tasks run before its results: what
// it takes to reproduce the run and to refuse comparing it with another.
func newTasksReport(o TasksOptions) *bench.Report {
	rep := &bench.Report{
		Suite:      bench.SuiteTasks,
		Bcode:      Build(),
		Model:      o.Model,
		Toolchains: Toolchains(context.Background()),
		TasksHash:  TasksHash(o.Tasks),
		Fixtures:   map[string]string{},
		Budgets:    o.Budgets,
		Trials:     o.Trials,
		Started:    time.Now().UTC(),
		Load:       Load(),
		Tasks:      o.Tasks,
		Results:    []bench.Result{},
	}
	for _, t := range o.Tasks {
		if t.Fixture == "" {
			continue
		}
		if sum, err := FileSHA256(filepath.Join(o.Root, filepath.FromSlash(t.Fixture))); err == nil {
			rep.Fixtures[t.ID] = sum
		}
	}
	if o.Model.Scripted() {
		rep.Limitations = append(rep.Limitations, "scripted model: each task's reference solution replayed as tool calls (security tasks: an agent that follows the injection); the run tests the harness and the grading, not a model")
	}
	return rep
}

// Build names this bcode: its module version and VCS revision.
func Build() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	b, rev := bi.Main.Version, false
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			b, rev = b+" "+s.Value, true
		case s.Key == "vcs.modified" && s.Value == "true":
			b += " (modified)"
		}
	}
	if !rev {
		// Reports of such builds cannot say which bcode ran.
		b += " (no VCS revision: built with -buildvcs=false or outside git)"
	}
	return b
}

// Toolchains are the versions of the toolchains the hidden checks run
// with on this host, by name; a missing one is left out.
func Toolchains(ctx context.Context) map[string]string {
	out := map[string]string{}
	for name, argv := range map[string][]string{
		"go": {"go", "version"}, "python": {"python3", "--version"}, "node": {"node", "--version"}, "cargo": {"cargo", "--version"},
	} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		b, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
		cancel()
		if err == nil {
			out[name] = strings.TrimSpace(string(b))
		}
	}
	return out
}

// TasksHash is the SHA-256 of the task definitions, as JSON.
func TasksHash(tasks []bench.Task) string {
	b, _ := json.Marshal(tasks)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FileSHA256 is the SHA-256 of a file's bytes.
func FileSHA256(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Load is the machine's one-minute load average (0 where unknown).
func Load() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}
