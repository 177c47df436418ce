package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`
[gate]
flake_runs = 5
test_timeout = "90s"
protected = ["ci/**", "*.pem"]

[evidence]
max_survivors = 0
python_isolation = "fork"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Gate.FlakeRuns != 5 || c.Gate.TestTimeout.Duration != 90*time.Second || c.Evidence.MaxSurvivors != 0 || c.Evidence.PythonIsolation != "fork" {
		t.Errorf("parsed %+v", c)
	}
	if c.Gate.SuiteTimeout != Default().Gate.SuiteTimeout || c.Task != Default().Task {
		t.Errorf("keys not in the file must keep their defaults: %+v", c)
	}
	if c.Task.MaxFileBytes != DefaultMaxFileBytes || c.Task.MaxCheckpointBytes != DefaultMaxCheckpointBytes {
		t.Errorf("checkpoint caps %d, %d; want the defaults", c.Task.MaxFileBytes, c.Task.MaxCheckpointBytes)
	}
	if c, err := Parse([]byte("[sandbox]\ndisk_mb = 512\n")); err != nil || c.Sandbox.DiskMB != 512 || c.Sandbox.Pids != DefaultSandboxPids {
		t.Errorf("sandbox.disk_mb: %+v, %v", c.Sandbox, err)
	}
	if c.Sandbox.DiskMB != DefaultSandboxDiskMB {
		t.Errorf("sandbox.disk_mb %d, want the default %d", c.Sandbox.DiskMB, DefaultSandboxDiskMB)
	}
	if c, err := Parse([]byte("[task]\nmax_file_bytes = 1000\nmax_checkpoint_bytes = 5000\n")); err != nil || c.Task.MaxFileBytes != 1000 || c.Task.MaxCheckpointBytes != 5000 {
		t.Errorf("checkpoint caps: %+v, %v", c.Task, err)
	}
	if c.Verify.Level != DefaultLevel {
		t.Errorf("verify.level %q, want the default %q", c.Verify.Level, DefaultLevel)
	}
	if c, err := Parse([]byte("[verify]\nlevel = \"V3\"\n")); err != nil || c.Verify.Level != LevelV3 {
		t.Errorf("verify.level: %+v, %v", c.Verify, err)
	}
	if g, ok := c.IsProtected("ci/deploy/run.sh"); !ok || g != "ci/**" {
		t.Errorf("ci/deploy/run.sh: protected by %q, %v", g, ok)
	}
	if g, ok := c.IsProtected("keys/server.pem"); !ok || g != "*.pem" {
		t.Errorf("keys/server.pem: protected by %q, %v", g, ok)
	}
	if _, ok := c.IsProtected("src/main.go"); ok {
		t.Error("src/main.go is not protected")
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		words    []string
	}{
		{"unknown key", "[gate]\nflake_run = 3\n", []string{Path, "flake_run"}},
		{"syntax", "[gate\n", []string{Path + ":1:"}},
		{"wrong type", "[gate]\nflake_runs = \"three\"\n", []string{Path + ":2:", "gate.flake_runs must be an integer, not a string"}},
		{"float for an int", "[sandbox]\nmemory_mb = 1.5\n", []string{"sandbox.memory_mb must be an integer, not a float"}},
		{"int for a list", "[gate]\nprotected = 3\n", []string{"gate.protected must be an array of strings, not an integer"}},
		{"int for a string", "[model]\nendpoint = 5\n", []string{"model.endpoint must be a string, not an integer"}},
		{"bad duration", "[gate]\ntest_timeout = \"soon\"\n", []string{"bad duration", "soon"}},
		{"negative duration", "[task]\nwall_clock = \"-5m\"\n", []string{"negative"}},
		{"flake runs out of range", "[gate]\nflake_runs = 0\n", []string{"gate.flake_runs = 0", "between 1 and 50"}},
		{"max survivors", "[evidence]\nmax_survivors = -2\n", []string{"evidence.max_survivors = -2"}},
		{"python isolation", "[evidence]\npython_isolation = \"thread\"\n", []string{"evidence.python_isolation", "thread", `"state" or "fork"`}},
		{"unknown level", "[verify]\nlevel = \"V4\"\n", []string{"verify.level", "V4", `"V1", "V2" or "V3"`}},
		{"lowercase level", "[verify]\nlevel = \"v2\"\n", []string{"verify.level", `"v2"`}},
		{"bad glob", "[gate]\nprotected = [\"[\"]\n", []string{"gate.protected", `"["`}},
		{"empty glob", "[gate]\nprotected = [\"\"]\n", []string{"gate.protected"}},
		{"zero file cap", "[task]\nmax_file_bytes = 0\n", []string{"task.max_file_bytes = 0"}},
		{"disk limit turned off", "[sandbox]\ndisk_mb = 0\n", []string{"sandbox.disk_mb = 0", "at least 64"}},
		{"checkpoint cap under the file cap", "[task]\nmax_file_bytes = 100\nmax_checkpoint_bytes = 99\n", []string{"task.max_checkpoint_bytes = 99"}},
		{"not utf-8", "[model]\nname = \"\xff\xfe\"\n", []string{Path}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("accepted: %+v", c)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !reflect.DeepEqual(c, Config{}) {
				t.Errorf("a config came back with the error: %+v", c)
			}
		})
	}
}

// FuzzParse feeds arbitrary bytes to Parse, which reads a file the
// repository (and so a change's author) controls. It must return an error
// or a configuration that passes validation, never panic, and a
// configuration it accepts must read back the same after being written out
// again. The seed corpus in testdata/fuzz/FuzzParse holds real
// configurations and broken ones.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), Path) {
				t.Errorf("error %q does not name %s", err, Path)
			}
			return
		}
		if c.Gate.FlakeRuns < 1 || c.Gate.FlakeRuns > 50 || c.Evidence.MaxSurvivors < -1 {
			t.Fatalf("accepted an invalid configuration: %+v", c)
		}
		for _, d := range []Duration{c.Gate.TestTimeout, c.Gate.SuiteTimeout, c.Evidence.CompileTimeout, c.Evidence.RunTimeout, c.Task.WallClock} {
			if d.Duration < 0 {
				t.Fatalf("accepted a negative duration: %+v", c)
			}
		}
		for _, g := range c.Gate.Protected {
			c.IsProtected(g)
			MatchGlob(g, "a/b/c.go")
		}
		out, err := toml.Marshal(c)
		if err != nil {
			t.Fatalf("writing %+v: %v", c, err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("written out as\n%s\nit no longer parses: %v", out, err)
		}
		if len(c.Gate.Protected) == 0 && len(again.Gate.Protected) == 0 {
			again.Gate.Protected = c.Gate.Protected // nil and [] are the same list
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("read back differently:\n%+v\n%+v", c, again)
		}
	})
}

func TestInfrastructureChanges(t *testing.T) {
	for _, tc := range []struct {
		toml              string
		person, agentTask bool // blocks?
	}{
		{"", false, true},
		{"[gate]\ninfrastructure_changes = \"findings\"\n", false, false},
		{"[gate]\ninfrastructure_changes = \"block\"\n", true, true},
	} {
		c, err := Parse([]byte(tc.toml))
		if err != nil {
			t.Fatalf("%q: %v", tc.toml, err)
		}
		if got := c.Gate.BlocksInfrastructure(false); got != tc.person {
			t.Errorf("%q: a person's change blocks = %v, want %v", tc.toml, got, tc.person)
		}
		if got := c.Gate.BlocksInfrastructure(true); got != tc.agentTask {
			t.Errorf("%q: an agent's task blocks = %v, want %v", tc.toml, got, tc.agentTask)
		}
	}
	_, err := Parse([]byte("[gate]\ninfrastructure_changes = \"warn\"\n"))
	if err == nil || !strings.Contains(err.Error(), `gate.infrastructure_changes = "warn"`) {
		t.Errorf("a bad value: %v, want an error naming the key and the value", err)
	}
}
