package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/verify"
)

//go:embed demo/README.txtar
var demoArchive []byte

func init() {
	register(command{
		name:    "demo",
		summary: "build a small repository with three changes and check each (no config, model or Docker needed)",
		run:     cmdDemo,
	})
}

func cmdDemo(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode demo [--dir DIR] [--state DIR]", stdout, stderr)
	fs.about = "Builds three small repositories (a fix with a test that proves it, a weak test, a skipped test)\nand runs bcode check on each: no configuration, model or Docker needed, only go."
	var st stateFlags
	st.register(fs.FlagSet)
	keep := fs.String("dir", "", "build the demo repositories in `DIR` and keep them (default: a temporary directory, removed after)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	if _, err := exec.LookPath("go"); err != nil {
		fmt.Fprintln(stderr, "bcode demo: the demo runs Go tests, and go is not on PATH: install Go from https://go.dev/dl")
		return exitError
	}
	root := *keep
	if root == "" {
		d, err := os.MkdirTemp("", "bcode-demo-")
		if err != nil {
			errorf(stderr, "bcode demo", "%v", err)
			return exitError
		}
		defer os.RemoveAll(d)
		root = d
	}
	if err := st.use(eng); err != nil {
		errorf(stderr, "bcode demo", "%v", err)
		return exitError
	}

	ar := txtar.Parse(demoArchive)
	fmt.Fprintf(stdout, "%s\n", strings.TrimSpace(string(ar.Comment)))
	code := 0
	for _, change := range []string{"fix", "weak", "skip"} {
		dir := filepath.Join(root, change)
		if err := buildDemoRepo(ctx, dir, ar, change); err != nil {
			fmt.Fprintf(stderr, "bcode demo: building the %s repository: %v\n", change, err)
			return exitError
		}
		fmt.Fprintf(stdout, "\n── bcode check --repo %s --base HEAD~1 --head HEAD\n", dir)
		rep, err := eng.Check(ctx, app.CheckRequest{Repo: dir, Base: "HEAD~1", Head: "HEAD", Progress: verify.NoProgress{}})
		if err != nil && rep == nil {
			errorf(stderr, "bcode demo", "%v", err)
			return exitError
		}
		printReport(stdout, rep)
		if rep.Verdict == verify.Error {
			code = exitError
		}
	}
	return code
}

// buildDemoRepo makes a git repository with the base commit and the named
// change committed on top of it.
func buildDemoRepo(ctx context.Context, dir string, ar *txtar.Archive, change string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		return errors.New(dir + " is not empty")
	}
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bcode demo", "GIT_AUTHOR_EMAIL=demo@bcode.invalid",
			"GIT_COMMITTER_NAME=bcode demo", "GIT_COMMITTER_EMAIL=demo@bcode.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	write := func(prefix string) error {
		for _, f := range ar.Files {
			name, ok := strings.CutPrefix(f.Name, prefix+"/")
			if !ok {
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	if err := git("init", "-q"); err != nil {
		return err
	}
	if err := write("base"); err != nil {
		return err
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	if err := git("commit", "-q", "-m", "base"); err != nil {
		return err
	}
	if err := write(change); err != nil {
		return err
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	return git("commit", "-q", "-m", change)
}
