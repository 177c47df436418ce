package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/internal/testenv"
)

// TestMain lets the scripts of testdata/script run this test binary as
// the bcode command (testscript.Main): a script's "exec bcode ..." is the
// real main, exit code and all.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"bcode": main})
}

// TestScripts runs testdata/script/*.txtar: every command and flag that
// README.md and docs/*.md show, run the way a user runs it, with the
// output it must give (TestDocsNameRealCommands checks that the scripts
// run each of them).
//
// A script gets a state directory, a home and a git identity of its own;
// go keeps the test's caches. Conditions: [docker] (a Docker engine
// answers), [bcode-ls] (bcode-ls was built for bcode ci).
func TestScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real commands on real repositories; skipped with -short")
	}
	testenv.Git(t)
	testenv.Go(t)
	goEnv := goEnvironment(t)
	lsDir := buildLanguageServer(t)
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			for k, v := range goEnv {
				env.Setenv(k, v)
			}
			home := filepath.Join(env.WorkDir, "home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("BCODE_STATE", filepath.Join(env.WorkDir, "state"))
			env.Setenv("BCODE_LEDGER", "")
			env.Setenv("BCODE_SRC", src) // this checkout: bcode bench reads its catalog and corpora
			env.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			for _, who := range []string{"AUTHOR", "COMMITTER"} {
				env.Setenv("GIT_"+who+"_NAME", "bcode script")
				env.Setenv("GIT_"+who+"_EMAIL", "script@bcode.invalid")
			}
			if lsDir != "" {
				env.Setenv("PATH", lsDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			}
			if h := os.Getenv("DOCKER_HOST"); h != "" {
				env.Setenv("DOCKER_HOST", h)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "docker":
				return dockerAnswers(), nil
			case "bcode-ls":
				return lsDir != "", nil
			}
			return false, errUnknownCondition(cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"setenv-stdout": setenvStdout,
			"demorepo":      demoRepo,
		},
	})
}

type errUnknownCondition string

func (e errUnknownCondition) Error() string { return "unknown condition " + string(e) }

// setenvStdout is "setenv-stdout NAME": NAME becomes the last command's
// stdout, trimmed (a task ID bcode task create printed).
func setenvStdout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: setenv-stdout NAME")
	}
	v := strings.TrimSpace(ts.ReadFile("stdout"))
	if v == "" || strings.ContainsAny(v, " \n") {
		ts.Fatalf("stdout %q is not one word", v)
	}
	ts.Setenv(args[0], v)
}

// demoRepo is "demorepo DIR CHANGE": the repository of bcode demo (the
// retry budget README.md's examples are about) with its base commit and
// CHANGE (fix, weak or skip) committed on top, on main.
func demoRepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: demorepo DIR CHANGE")
	}
	ts.Check(buildDemoRepo(context.Background(), ts.MkAbs(args[0]), txtar.Parse(demoArchive), args[1]))
}

// goEnvironment is what go needs to keep using the test's caches and
// settings once HOME is the script's.
func goEnvironment(t *testing.T) map[string]string {
	names := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV", "GOFLAGS", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE"}
	out, err := exec.Command("go", append([]string{"env"}, names...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	env := map[string]string{"GOTOOLCHAIN": "local"}
	for i, v := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if i < len(names) && v != "" {
			env[names[i]] = v
		}
	}
	return env
}

// buildLanguageServer builds bcode-ls for bcode ci into a directory of
// its own ("" when it cannot be built: [bcode-ls] is then false).
func buildLanguageServer(t *testing.T) string {
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "bcode-ls"), "../bcode-ls").CombinedOutput(); err != nil {
		t.Logf("building bcode-ls: %v\n%s", err, out)
		return ""
	}
	return dir
}

var dockerAnswers = sync.OnceValue(func() bool {
	return exec.Command("docker", "version", "--format", "{{.Server.Version}}").Run() == nil
})
