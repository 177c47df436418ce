package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

func init() {
	register(command{
		name:    "doctor",
		summary: "check that Docker, the sandbox image, bcode-agent, the model server and the toolchains are ready",
		run:     cmdDoctor,
	})
}

// loadRepoConfig reads the checkout's .bcode/config.toml over the defaults
// (no file: the defaults).
func loadRepoConfig(repo string) (config.Config, error) {
	data, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(config.Path)))
	if errors.Is(err, os.ErrNotExist) {
		return config.Default(), nil
	}
	if err != nil {
		return config.Default(), err
	}
	return config.Parse(data)
}

// repoConfig is loadRepoConfig for callers that fall back to the defaults
// on a broken file (doctor reports the breakage itself).
func repoConfig(repo string) config.Config {
	c, err := loadRepoConfig(repo)
	if err != nil {
		return config.Default()
	}
	return c
}

// doctorCheck is one line of the doctor's report.
type doctorCheck struct {
	name   string
	ok     bool
	detail string // what was found
	fix    string // what to do when !ok
}

func cmdDoctor(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode doctor [--repo DIR] [--state DIR] [--model-endpoint URL]", stdout, stderr)
	fs.about = "Checks what bcode needs (Docker, the sandbox image, bcode-agent, the model server, the toolchains)\nand says how to fix each one that is not ready. Exit status: 0 all ready, 1 some not."
	var st stateFlags
	st.register(fs.FlagSet)
	endpoint := fs.String("model-endpoint", "", "the model server `URL` to check (default: [model] endpoint of .bcode/config.toml)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	records := eng // where the sandbox images' records are; nil: unusable
	if st.useLocal(eng) != nil {
		records = nil
	}
	var checks []doctorCheck
	cfg, err := loadRepoConfig(st.repo)
	if err != nil {
		checks = append(checks, doctorCheck{name: "config", detail: err.Error(), fix: "fix " + config.Path + " (bcode uses the defaults meanwhile)"})
	}
	if *endpoint == "" {
		*endpoint = cfg.Model.Endpoint
	}
	checks = append(checks, doctorDocker(ctx, records, cfg.Sandbox.Image)...)
	checks = append(checks, doctorAgent())
	checks = append(checks, doctorModel(ctx, *endpoint))
	checks = append(checks, doctorToolchains(ctx, cfg.Gate.Python)...)

	failed := 0
	for _, c := range checks {
		mark := "ok  "
		if !c.ok {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(stdout, "%s %-8s %s\n", mark, c.name, shown.Line(c.detail))
		if !c.ok && c.fix != "" {
			fmt.Fprintf(stdout, "              fix: %s\n", shown.Line(c.fix))
		}
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d checks failed\n", failed, len(checks))
		return 1
	}
	fmt.Fprintf(stdout, "all %d checks passed\n", len(checks))
	return 0
}

// doctorAgent checks that the bcode-agent a task would mount is found, is a
// Linux executable and was built from the same sources as this bcode.
func doctorAgent() doctorCheck {
	p, err := agentbackend.FindAgent()
	if err != nil {
		msg, fix, _ := strings.Cut(err.Error(), "): ")
		if fix == "" {
			return doctorCheck{name: "agent", detail: err.Error()}
		}
		return doctorCheck{name: "agent", detail: msg + ")", fix: fix}
	}
	v, err := agentbackend.CheckAgentVersion(p)
	if err != nil {
		msg, fix, _ := strings.Cut(err.Error(), ": install it")
		return doctorCheck{name: "agent", detail: msg, fix: "install it" + fix}
	}
	return doctorCheck{name: "agent", ok: true, detail: p + " " + v.String()}
}

// doctorDocker checks the engine and the image.
func doctorDocker(ctx context.Context, records *app.Engine, ref string) []doctorCheck {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p := app.ProbeSandbox(cctx, ref)
	if p.Unreachable != nil {
		return []doctorCheck{
			{name: "docker", detail: p.Unreachable.Error(), fix: "install it with 'apt-get install docker.io' if missing, then start it: 'sudo systemctl start docker' or 'dockerd &'"},
			{name: "image", detail: ref + ": not checked, Docker is not reachable", fix: "start Docker, then run 'bcode sandbox build'"},
		}
	}
	var out []doctorCheck
	v := p.Version
	if p.VersionErr != nil {
		out = append(out, doctorCheck{name: "docker", detail: p.VersionErr.Error(), fix: "check that the engine is healthy: 'docker info'"})
	} else {
		c := doctorCheck{name: "docker", ok: true, detail: fmt.Sprintf("Docker %s, API %s (engine supports %s–%s), %s/%s", v.Engine, v.Negotiated, v.MinAPIVersion, v.APIVersion, v.OS, v.Arch)}
		if !v.Seccomp {
			c.ok, c.fix = false, "the engine applies no seccomp profile: use an engine built with seccomp support"
			c.detail += ", no seccomp"
		}
		out = append(out, c)
	}
	// What a killed bcode left: containers whose owner process is gone.
	if p.ReapErr != nil {
		out = append(out, doctorCheck{name: "orphans", detail: "listing bcode's containers: " + p.ReapErr.Error(), fix: "check the engine with 'docker ps -a --filter label=dev.bcode.sandbox'"})
	} else {
		out = append(out, doctorCheck{name: "orphans", ok: true, detail: fmt.Sprintf("removed %d containers of bcode processes that are gone", p.Reaped)})
	}
	img, err := p.Image, p.ImageErr
	switch {
	case errors.Is(err, app.ErrNoSandboxImage):
		out = append(out, doctorCheck{name: "image", detail: ref + " is not built", fix: "run 'bcode sandbox build'"})
	case err != nil:
		out = append(out, doctorCheck{name: "image", detail: err.Error(), fix: "check the engine with 'docker images'"})
	default:
		c := doctorCheck{name: "image", ok: true, detail: fmt.Sprintf("%s %s (rootfs v%s, created %s)", img.Ref, img.ID, img.Rootfs, img.Created.Format(time.RFC3339))}
		if img.Rootfs == "" {
			c.ok, c.fix = false, "this image was not made by bcode: run 'bcode sandbox build'"
		}
		// The ledger says which image bcode built; another one under the
		// same tag was not built by this bcode.
		var rec app.SandboxImage
		var ok bool
		rerr := app.ErrNoImageRecords
		if records != nil {
			rec, ok, rerr = records.LastSandboxImage(ctx, ref)
		}
		if !errors.Is(rerr, app.ErrNoImageRecords) {
			switch {
			case rerr != nil:
				c.detail += "; ledger: " + rerr.Error()
			case !ok:
				c.detail += "; not recorded in the ledger"
			case rec.ImageID != img.ID:
				c.ok = false
				c.detail += "; the ledger recorded " + rec.ImageID + " for this tag"
				c.fix = "the tag now names an image bcode did not build: run 'bcode sandbox build'"
			default:
				c.detail += "; recorded in the ledger"
			}
		}
		out = append(out, c)
	}
	return out
}

// doctorModel asks the model server's /health (llama-server answers 200
// when a model is loaded, 503 while loading).
func doctorModel(ctx context.Context, endpoint string) doctorCheck {
	fix := "start it with 'bcode model serve --model FILE.gguf' (or llama-server on " + endpoint + "), or set [model] endpoint in " + config.Path
	url := strings.TrimRight(endpoint, "/") + "/health"
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, url, nil)
	if err != nil {
		return doctorCheck{name: "model", detail: fmt.Sprintf("bad endpoint %q: %v", endpoint, err), fix: "set [model] endpoint in " + config.Path}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return doctorCheck{name: "model", detail: "model server not reachable at " + endpoint + ": " + err.Error(), fix: fix}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch resp.StatusCode {
	case http.StatusOK:
		return doctorCheck{name: "model", ok: true, detail: endpoint + " is healthy"}
	case http.StatusServiceUnavailable:
		return doctorCheck{name: "model", detail: endpoint + " is up but not ready (still loading the model?): " + strings.TrimSpace(string(body)), fix: "wait for the model to load and run 'bcode doctor' again"}
	default:
		return doctorCheck{name: "model", detail: fmt.Sprintf("GET %s: %s %s", url, resp.Status, strings.TrimSpace(string(body))), fix: fix}
	}
}

// doctorToolchains checks what verification runs: go, git, and a Python
// with pytest, on the host and in the sandbox.
func doctorToolchains(ctx context.Context, python string) []doctorCheck {
	run := func(name string, args ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var out bytes.Buffer
		cmd := exec.CommandContext(cctx, name, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return strings.TrimSpace(out.String()), err
	}
	var out []doctorCheck
	if v, err := run("go", "version"); err != nil {
		out = append(out, doctorCheck{name: "go", detail: "go: " + errDetail(err, v), fix: "install Go from https://go.dev/dl and put it on PATH"})
	} else {
		out = append(out, doctorCheck{name: "go", ok: true, detail: v})
	}
	if v, err := run("git", "--version"); err != nil {
		out = append(out, doctorCheck{name: "git", detail: "git: " + errDetail(err, v), fix: "install git ('apt-get install git')"})
	} else {
		out = append(out, doctorCheck{name: "git", ok: true, detail: v})
	}
	// The host gate takes the configured interpreter, else the first of
	// python3 and /usr/bin/python3 that can import pytest (verify/python).
	candidates := []string{"python3", "/usr/bin/python3"}
	if python != "" {
		candidates = []string{python}
	}
	var tried []string
	hostOK := false
	for _, py := range candidates {
		v, err := run(py, "-m", "pytest", "--version")
		if err == nil {
			out = append(out, doctorCheck{name: "pytest", ok: true, detail: fmt.Sprintf("host gate: %s: %s", py, v)})
			hostOK = true
			break
		}
		tried = append(tried, py+": "+errDetail(err, v))
	}
	if !hostOK {
		out = append(out, doctorCheck{name: "pytest", detail: "host gate: no interpreter with pytest (" + strings.Join(tried, "; ") + ")",
			fix: "install pytest: 'apt-get install python3-pytest' for the system Python, or '<python> -m pip install pytest' and set [gate] python in " + config.Path})
	}
	// The sandbox mounts the host's /usr: its Python is the system one.
	if v, err := run("/usr/bin/python3", "-m", "pytest", "--version"); err != nil {
		out = append(out, doctorCheck{name: "pytest", detail: "sandbox: /usr/bin/python3: " + errDetail(err, v),
			fix: "install the system Python's pytest: 'apt-get install python3-pytest'"})
	} else {
		out = append(out, doctorCheck{name: "pytest", ok: true, detail: "sandbox: /usr/bin/python3: " + v})
	}
	return out
}

func errDetail(err error, output string) string {
	if errors.Is(err, exec.ErrNotFound) {
		return "not found"
	}
	if output != "" {
		if i := strings.IndexByte(output, '\n'); i > 0 {
			output = output[:i]
		}
		return output
	}
	return err.Error()
}
