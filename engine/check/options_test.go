package check

import (
	"testing"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// The base's [evidence] settings reach the mutation run unless the
// caller (a flag) set them, python_isolation included.
func TestEvidenceOptionsFromConfig(t *testing.T) {
	cfg, err := config.Parse([]byte("[evidence]\nworkers = 3\nrun_timeout = \"2m\"\npython_isolation = \"fork\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := EvidenceOptions(cfg, mutate.Options{})
	if o.Workers != 3 || o.RunTimeout != 2*time.Minute || o.PythonIsolation != mutate.PythonIsolateFork {
		t.Errorf("from the config: %+v", o)
	}
	o = EvidenceOptions(cfg, mutate.Options{Workers: 1, PythonIsolation: mutate.PythonIsolateState})
	if o.Workers != 1 || o.PythonIsolation != mutate.PythonIsolateState {
		t.Errorf("the caller's settings must win: %+v", o)
	}
	if o := EvidenceOptions(config.Default(), mutate.Options{}); o.PythonIsolation != "" {
		t.Errorf("default isolation %q, want the engine's default (empty: state)", o.PythonIsolation)
	}
}
