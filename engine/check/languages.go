package check

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/golang"
	"github.com/bcode-dev/bcode/verify/javascript"
	"github.com/bcode-dev/bcode/verify/mutate"
	mutgo "github.com/bcode-dev/bcode/verify/mutate/golang"
	mutjs "github.com/bcode-dev/bcode/verify/mutate/javascript"
	mutpy "github.com/bcode-dev/bcode/verify/mutate/python"
	mutrust "github.com/bcode-dev/bcode/verify/mutate/rust"
	"github.com/bcode-dev/bcode/verify/python"
	"github.com/bcode-dev/bcode/verify/rust"
)

// Adapters are the gate's language adapters, the one list every surface
// judges and runs tests with: Go, Python, JavaScript and TypeScript
// (node --test), Rust (cargo test). cfg is the base commit's
// configuration; r is the runner their commands will run in, which
// decides what of the host's toolchains they are told about
// (rustAdapter).
//
// An adapter whose language the repository does not use costs a walk of
// the snapshot and starts nothing: RunSuite of a tree without test files
// of its language (JavaScript) or without a Cargo.toml (Rust) runs no
// command.
func Adapters(r sandbox.Runner, cfg config.Config) []verify.Adapter {
	py := python.New(cfg.Gate.Python)
	py.StartupFiles = cfg.Python.StartupFiles
	return []verify.Adapter{golang.New(), py, javascript.New(), rustAdapter(r)}
}

// MutationEngines are the language engines every surface mutates with
// (EvidenceOptions gives them): Go, Python, JavaScript, then Rust, whose
// cargo is told about the host's toolchains as the gate's adapter is
// (rustAdapter, decided by the runner each run uses).
func MutationEngines() []mutate.Engine {
	return []mutate.Engine{mutgo.New(), mutpy.New(), mutjs.New(), &mutrust.Engine{Adapter: rustAdapter}}
}

// rustAdapter is the Rust adapter for commands run by r. The host runner
// gives commands a fresh HOME, where rustup's cargo and rustc proxies
// find no toolchain and cargo no registry: on the host the adapter is
// told where the user's rustup and cargo homes are (rustHomes). Other
// runners (a container) see none of the host's home, so they get nothing.
func rustAdapter(r sandbox.Runner) *rust.Adapter {
	a := rust.New()
	if r != nil && r.Name() == "host" {
		a.Env = rustHomes(os.Getenv, os.UserHomeDir)
	}
	return a
}

// rustHomes is RUSTUP_HOME and CARGO_HOME ("KEY=dir") as rustup and cargo
// themselves choose them (the variable, else ~/.rustup and ~/.cargo),
// each only when that directory exists, and nothing else of the
// environment.
func rustHomes(getenv func(string) string, userHome func() (string, error)) []string {
	var env []string
	for _, v := range []struct{ key, dflt string }{{"RUSTUP_HOME", ".rustup"}, {"CARGO_HOME", ".cargo"}} {
		dir := getenv(v.key)
		if dir == "" {
			home, err := userHome()
			if err != nil || home == "" {
				continue
			}
			dir = filepath.Join(home, v.dflt)
		}
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			env = append(env, v.key+"="+dir)
		}
	}
	return env
}

// typeScriptExts are the files node --test, the JavaScript adapter's one
// runner, does not run: TypeScript, types and all.
var typeScriptExts = map[string]bool{".ts": true, ".tsx": true, ".mts": true, ".cts": true}

// holdTypeScript names the change's TypeScript files that no runner of
// their project runs as not judged (Report.Unsupported), and takes a green
// or verified verdict back to error when they are all the change has of
// code. The JavaScript adapter runs TypeScript where the project's runner
// does (vitest, jest, node --test with tsx: javascript.RunsTypeScript, read
// in the head's snapshot); elsewhere its TypeScript test files are left
// out of every suite, and a JavaScript test cannot import a .ts file. So
// no test of that code ran, and, as for a language bcode has no adapter
// for (verify's unsupported files), a verdict stands only for the rest of
// the change. Failed and tampered verdicts stay: they need no test of it.
func holdTypeScript(ctx context.Context, rep *verify.Report, change *verify.Change) {
	js := javascript.New()
	adapters := Adapters(nil, config.Default())
	var files []string
	judged := false
	headDir := ""
	for _, f := range change.Files {
		ts := js.Owns(f.Path) && typeScriptExts[path.Ext(f.Path)]
		if ts && f.Head != nil && headDir == "" {
			headDir, _ = change.Workspace.Materialize(ctx, verify.HeadSide, nil)
		}
		if ts && headDir != "" {
			if runs, _ := js.RunsTypeScript(headDir, f.Path); runs {
				ts = false
			}
		}
		if !ts {
			for _, a := range adapters {
				judged = judged || a.Owns(f.Path)
			}
			continue
		}
		files = append(files, f.Path)
		what := "code"
		if js.IsTestFile(f.Path) {
			what = "test"
		}
		rep.Unsupported = append(rep.Unsupported, verify.Finding{
			Code:    verify.FindingUnsupported,
			Path:    f.Path,
			Message: fmt.Sprintf("TypeScript %s (%s): its project runs tests with node --test, which runs no TypeScript without tsx, so no test of it ran", what, f.Status),
		})
	}
	sort.Slice(rep.Unsupported, func(i, j int) bool { return rep.Unsupported[i].Path < rep.Unsupported[j].Path })
	if len(files) == 0 || judged || (rep.Verdict != verify.Green && rep.Verdict != verify.Verified) {
		return
	}
	rep.Verdict = verify.Error
	rep.Reasons = []verify.Reason{{
		Code:    verify.ReasonUnsupported,
		Message: fmt.Sprintf("bcode cannot judge this change: %v: TypeScript (%s), so none of its tests ran", javascript.ErrTypeScriptRun, strings.Join(files, ", ")),
	}}
}
