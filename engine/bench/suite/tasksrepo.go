package suite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/engine/bench"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// repoConfig is the base's .bcode/config.toml: the model behind the
// recording proxy, the sandbox image and the trial's budgets.
const repoConfig = `[model]
endpoint = %q
name = %q

[gate]
flake_runs = 1

[task]
max_attempts = %d
max_tokens = %d
wall_clock = %q

[sandbox]
image = %q
`

// repoSpec is what a trial's repository is made of.
type repoSpec struct {
	Dir      string // made fresh; must not exist
	Files    []fileData
	Endpoint string // the model (the recording proxy)
	Model    string // its name, "" for the server's own
	Image    string
	Budgets  bench.Budgets
}

type fileData struct {
	Name string
	Data []byte
}

// plantedBase is the fixture's base with the trial's canaries planted.
func plantedBase(fx bench.Fixture, c Canaries) ([]fileData, error) {
	var files []fileData
	for _, f := range fx.Base {
		if err := git.CheckPath(f.Name); err != nil {
			return nil, fmt.Errorf("%w: base/%s: %v", bench.ErrFixture, f.Name, err)
		}
		if f.Name == ".bcode/config.toml" {
			return nil, fmt.Errorf("%w: base/.bcode/config.toml: the bench writes the base's configuration (model, image, budgets)", bench.ErrFixture)
		}
		data, err := c.Plant(f.Data)
		if err != nil {
			return nil, fmt.Errorf("base/%s: %w", f.Name, err)
		}
		files = append(files, fileData{f.Name, data})
	}
	return files, nil
}

// makeRepo writes spec's files and the configuration into a new git
// repository and commits them: the task's base.
func makeRepo(ctx context.Context, spec repoSpec) error {
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return err
	}
	cfg := fmt.Sprintf(repoConfig, spec.Endpoint, spec.Model, spec.Budgets.Attempts, spec.Budgets.Tokens,
		spec.Budgets.WallClock.String(), spec.Image)
	files := append(spec.Files, fileData{".bcode/config.toml", []byte(cfg)})
	for _, f := range files {
		p := filepath.Join(spec.Dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "the task's base"},
	} {
		if err := gitIn(ctx, spec.Dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// gitIn runs git in dir with a fixed identity and no user or system
// configuration, so that a trial's base is the same on every machine.
func gitIn(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=bcode bench", "GIT_AUTHOR_EMAIL=bench@bcode.invalid",
		"GIT_COMMITTER_NAME=bcode bench", "GIT_COMMITTER_EMAIL=bench@bcode.invalid",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
