package perf

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bcode-dev/bcode/verify"
	mutgo "github.com/bcode-dev/bcode/verify/mutate/golang"
)

// goSummary is one Go case's timings side by side.
type goSummary struct {
	name                              string
	cold, warm, save, floor, gremlins toolRun
	// load is the load average (1, 5, 15 min) as the case started and
	// as it ended: every row of the case ran in between.
	load [2]string
}

// changedGoFiles are the non-test Go files HEAD~1..HEAD changed in dir.
func changedGoFiles(dir string) ([]string, error) {
	cmd := exec.Command("git", "diff", "--name-only", "--diff-filter=AM", "HEAD~1", "HEAD", "--", "*.go")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git diff in %s: %w", dir, err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasSuffix(f, "_test.go") && !strings.Contains("/"+f, "/testdata/") {
			files = append(files, f)
		}
	}
	return files, nil
}

// touchChanged appends a declaration with a fresh nonce to every changed
// Go file and returns the undo. Lines and verdicts stay the same; the
// compiled code is new, so no cache of bcode's or Go's holds the package or
// its link. (A comment alone was not enough: it leaves the object file as
// it was, and Go's cache then served the floor's link.) The declaration is
// inert, so bcode keeps the per-test baseline across it (the Go engine's
// keyContent): the "save" row is a save that appends; -save body makes it
// one that edits a function body (editBodies).
func touchChanged(dir string) (func(), error) {
	files, err := changedGoFiles(dir)
	if err != nil {
		return nil, err
	}
	saved := map[string][]byte{}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		saved[p] = data
		edit := append(append([]byte(nil), data...), fmt.Sprintf("\n// BcodeBenchSave%[1]d is a save's edit.\nvar BcodeBenchSave%[1]d = %[1]d\n", time.Now().UnixNano())...)
		if err := os.WriteFile(p, edit, 0o644); err != nil {
			return nil, err
		}
	}
	return func() {
		for p, data := range saved {
			_ = os.WriteFile(p, data, 0o644)
		}
	}, nil
}

// editBodies edits, in every changed Go file, the first function whose
// body holds a line HEAD~1..HEAD changed (when no file has one: the first
// file's first function with a body), as a save while working on the
// change does: a statement with a fresh nonce goes right after the body's
// opening brace, on the same line, so no line moves and no mutant is
// added, while the compiled code is new. It returns the undo. This is the
// save of -save body: the per-test baseline of the tests that reached the
// edited functions runs again, the others' is kept.
func editBodies(ctx context.Context, dir string) (func(), error) {
	files, err := changedGoFiles(dir)
	if err != nil {
		return nil, err
	}
	change, err := diffChange(ctx, dir)
	if err != nil {
		return nil, err
	}
	changed := map[string][]verify.LineRange{}
	for _, f := range change.Files {
		changed[f.Path] = f.Changed
	}
	saved := map[string][]byte{}
	undo := func() {
		for p, data := range saved {
			_ = os.WriteFile(p, data, 0o644)
		}
	}
	edit := func(f string, ranges []verify.LineRange) error {
		p := filepath.Join(dir, filepath.FromSlash(f))
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		at, err := bodyToEdit(data, ranges)
		if err != nil || at < 0 {
			return err
		}
		saved[p] = data
		stmt := fmt.Sprintf(" _ = func() string { return \"bcode bench save %d\" };", time.Now().UnixNano())
		return os.WriteFile(p, append(append(append([]byte(nil), data[:at]...), stmt...), data[at:]...), 0o644)
	}
	for _, f := range files {
		if err := edit(f, changed[f]); err != nil {
			undo()
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	if len(saved) == 0 && len(files) > 0 {
		if err := edit(files[0], nil); err != nil {
			undo()
			return nil, fmt.Errorf("%s: %w", files[0], err)
		}
	}
	if len(saved) == 0 {
		return nil, errors.New("no function body to edit")
	}
	return undo, nil
}

// bodyToEdit is the offset just after the opening brace of the first
// function body of src that holds a line of ranges, -1 when none does;
// with no ranges, of its first function with a body.
func bodyToEdit(src []byte, ranges []verify.LineRange) (int, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return 0, err
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		at := fset.Position(fd.Body.Lbrace).Offset + 1
		if ranges == nil {
			return at, nil
		}
		sl, el := fset.Position(fd.Body.Lbrace).Line, fset.Position(fd.Body.Rbrace).Line
		for _, r := range ranges {
			if r.Start <= el && r.End >= sl {
				return at, nil
			}
		}
	}
	return -1, nil
}

// compileFloor builds the test binary of every package with changed Go
// files once (`go test -c`), one after the other: the least a tool that
// runs those tests pays after an edit, whatever it then does.
func compileFloor(ctx context.Context, dir string) toolRun {
	run := toolRun{tool: "floor: go test -c"}
	files, err := changedGoFiles(dir)
	if err != nil {
		run.err = err.Error()
		return run
	}
	pkgs := map[string]bool{}
	for _, f := range files {
		pkgs["./"+path.Dir(f)] = true
	}
	out, err := os.MkdirTemp("", "bcode-bench-floor-")
	if err != nil {
		run.err = err.Error()
		return run
	}
	defer os.RemoveAll(out)
	start := time.Now()
	i := 0
	for p := range pkgs {
		i++
		// The flags of bcode's own builds, so the floor is the same build.
		args := append(append([]string{"test", "-c"}, mutgo.TestBuildFlags(os.Getenv("GOFLAGS"))...), "-o", filepath.Join(out, fmt.Sprintf("p%d.test", i)), p)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			run.err = "go test -c " + p + ": " + oneLineErr(fmt.Errorf("%v: %s", err, b))
			return run
		}
	}
	run.wall = time.Since(start)
	return run
}

// printGoSummary prints each case's cold, warm and save times beside the
// compile floor and gremlins, with the ratios of mutants per minute and the
// best ratio the floor allows (bcode's mutants in the floor's time).
func printGoSummary(w io.Writer, sums []goSummary) {
	if len(sums) == 0 {
		return
	}
	fmt.Fprintln(w, "\nGo summary (mutants/min ratios vs gremlins; \"at floor\" = bcode's mutants in one `go test -c`'s time;")
	fmt.Fprintln(w, "save / floor = bcode's save against that build; load = load average as the case started -> ended):")
	fmt.Fprintf(w, "caches: bcode cold = an empty bcode cache per case; Go's build cache (%s) as the machine has it, for every tool\n", goCacheDir())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tbcode mutants\tcold\twarm\tsave\tfloor\tsave / floor\tgremlins (mutants, wall)\tcold ratio\twarm ratio\tsave ratio\tratio at floor\tload")
	d := func(r toolRun) string {
		if r.err != "" || r.wall <= 0 {
			return "-"
		}
		return r.wall.Round(10 * time.Millisecond).String()
	}
	ratio := func(r toolRun, g toolRun) string {
		if r.err != "" || g.err != "" || g.perMinute() <= 0 || r.wall <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1fx", r.perMinute()/g.perMinute())
	}
	for _, s := range sums {
		atFloor := "-"
		if s.floor.err == "" && s.floor.wall > 0 && s.gremlins.err == "" && s.gremlins.perMinute() > 0 {
			atFloor = fmt.Sprintf("%.1fx", float64(s.cold.count)/s.floor.wall.Minutes()/s.gremlins.perMinute())
		}
		g := "-"
		if s.gremlins.err == "" {
			g = fmt.Sprintf("%d, %s", s.gremlins.count, d(s.gremlins))
		}
		saveFloor := "-"
		if s.save.err == "" && s.floor.err == "" && s.floor.wall > 0 && s.save.wall > 0 {
			saveFloor = fmt.Sprintf("%.2fx", s.save.wall.Seconds()/s.floor.wall.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s -> %s\n", s.name, s.cold.count, d(s.cold), d(s.warm), d(s.save), d(s.floor), saveFloor, g,
			ratio(s.cold, s.gremlins), ratio(s.warm, s.gremlins), ratio(s.save, s.gremlins), atFloor, s.load[0], s.load[1])
	}
	tw.Flush()
}

// goCacheDir is `go env GOCACHE`, for the benchmark's statement of what it
// started with.
func goCacheDir() string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
