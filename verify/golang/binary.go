package golang

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// Repeated runs of the same tests (the gate's fail-to-pass repeats, each in
// a process of its own) compile the test binary once with `go test -c` and
// then start it directly, the way `go test` itself does: in the package's
// directory, with -test.paniconexit0 and -test.timeout, and with
// -test.v=test2json, whose framed output is turned into the events of a
// `go test -json` stream here. A `go test` per round would pay the go
// command's package loading and cache checks every time (0.5 to 1 s of CPU
// for a tiny package) for a run that takes milliseconds.

// binDirName is the directory inside a snapshot that holds the compiled
// test binaries. Its leading dot keeps it out of `./...`.
const binDirName = ".bcode-test-binaries"

// The gate's suite runs on the two sides the repeats run on keep the test
// binaries of the candidate packages (RunSuiteKeeping), so a repeat starts
// the binary whose run it repeats instead of paying `go test -c` (the test
// main compiled again and a full link: about 60% of the CPU of the first
// run of a small package). go test runs each test binary through -exec,
// here a shell that hard-links (or copies) the binary aside and then execs
// it with go test's own arguments. The binary is the one go test links for
// running (-s -w), so the run is as it would have been; only the test log
// go test uses for caching a result is left out, as with any -exec, and
// these runs' results are not cached.
//
// The binaries are kept beside the snapshot, not in it (a test that walks
// its repository must see the same tree on every side), in keptDir(dir),
// below each package directory's physical path; the adapter makes those
// directories before the run, and the shell keeps a binary only when its
// working directory (go test starts each test binary in its package
// directory) has one, writing it as "test" there: a copy goes to a
// temporary name first, so a binary that is there is whole. When nothing
// was kept, the repeats build the binary with go test -c as before.
const (
	keepEnvVar = "BCODE_KEEP_TEST_BINARIES"
	keepScript = `k="$` + keepEnvVar + `$(pwd -P)"; if [ -d "$k" ]; then ln -f "$0" "$k/test" 2>/dev/null || { cp "$0" "$k/test.tmp" && mv -f "$k/test.tmp" "$k/test"; } 2>/dev/null; fi; exec "$0" "$@"`
)

// keptDir is where the suite runs in dir keep test binaries.
func keptDir(dir string) string { return filepath.Clean(dir) + ".test-binaries" }

// keptBinary is where the binary of pkg (a "." or "./dir" pattern) of the
// snapshot dir is kept: below the package directory's physical path, which
// is what `pwd -P` prints in the test binary's working directory.
func keptBinary(dir, pkg string) (string, bool) {
	pkgDir := dir
	if pkg != "." {
		pkgDir = filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(pkg, "./")))
	}
	phys, err := filepath.EvalSymlinks(pkgDir)
	if err != nil || !filepath.IsAbs(phys) {
		return "", false
	}
	// The package directory must be inside the snapshot, not reached
	// through a link out of it.
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false
	}
	if rel, err := filepath.Rel(root, phys); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.Join(keptDir(dir), phys, "test"), true
}

// keepBinaries marks the packages in keep for keeping and returns the go
// test flags and environment that keep them: nothing when keep is empty or
// no mark can be made.
func keepBinaries(dir string, keep []string) (args, env []string) {
	if len(keep) == 0 || runtime.GOOS == "windows" {
		return nil, nil
	}
	// Made here, before anything of the change runs: a directory that is
	// already there is not bcode's.
	if err := os.Mkdir(keptDir(dir), 0o755); err != nil {
		return nil, nil
	}
	marked := false
	for _, pkg := range keep {
		if checkPackage(pkg) != nil {
			continue
		}
		if bin, ok := keptBinary(dir, pkg); ok && os.MkdirAll(filepath.Dir(bin), 0o755) == nil {
			marked = true
		}
	}
	if !marked {
		return nil, nil
	}
	// -exec is split as a shell would (cmd/internal/quoted): the script,
	// which has no single quote, is one field.
	return []string{"-exec", "sh -c '" + keepScript + "'"}, []string{keepEnvVar + "=" + keptDir(dir)}
}

// DropBinaries implements verify.BinaryKeeper.
func (a *Adapter) DropBinaries(dir string) {
	os.RemoveAll(keptDir(dir))
	os.RemoveAll(filepath.Join(dir, binDirName))
}

// compileTest builds pkg's test binary in dir with `go test -c`. It returns
// "" (and no error) when there is no binary to run: the package has no
// test files, or it does not build; the caller then runs `go test`, which
// reports why in its own words.
func (a *Adapter) compileTest(ctx context.Context, r sandbox.Runner, dir string, l layout, pkg string, opts verify.RunOptions) (string, error) {
	root, rel, ok := inModule(l, pkg)
	if !ok {
		return "", nil
	}
	if bin, ok := keptBinary(dir, pkg); ok {
		if fi, err := os.Lstat(bin); err == nil && fi.Mode().IsRegular() {
			return bin, nil // kept by the suite run: see RunSuiteKeeping
		}
	}
	binDir := filepath.Join(dir, binDirName)
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("go adapter: %w", err)
	}
	bin := filepath.Join(binDir, strings.NewReplacer("/", "_", ".", "_").Replace(pkg)+".test")
	cwd, env, flags := a.goCommand(dir, l, root)
	mains, err := placeGateMains(dir, []string{strings.TrimPrefix(pkg, "./")})
	if err != nil {
		return "", err
	}
	args := append([]string{a.goBin(), "test", "-c", "-vet=off"}, flags...)
	args = append(args, mains.flags()...)
	args = append(args, "-o", bin, rel)
	_, limit := a.testTimeout(opts)
	res, err := r.Run(ctx, sandbox.Command{Dir: cwd, Args: args, Env: env, Timeout: limit})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 || res.TimedOut {
		return "", nil
	}
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() {
		return "", nil // no test files: go test -c writes nothing
	}
	return bin, nil
}

// runBinary runs a compiled test binary once, as `go test -json -run
// pattern -count=count` would, and parses what it printed.
func (a *Adapter) runBinary(ctx context.Context, r sandbox.Runner, dir string, l layout, pkg, bin, pattern string, count int, opts verify.RunOptions) (sandbox.Result, *Stream, error) {
	flag, limit := a.testTimeout(opts)
	root, _, _ := inModule(l, pkg)
	_, env, _ := a.goCommand(dir, l, root)
	pkgDir := dir
	if pkg != "." {
		pkgDir = filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(pkg, "./")))
	}
	args := []string{bin, "-test.v=test2json", "-test.paniconexit0", "-test.timeout=" + flag,
		"-test.count=" + strconv.Itoa(count), "-test.run=" + pattern}
	// The binary was built with bcode's TestMain where the package could
	// take one (compileTest, or the suite run that kept it).
	mains, gr, gateEnv, err := packageGate(dir, pkg)
	if err != nil {
		return sandbox.Result{}, nil, err
	}
	defer gr.close()
	// go test gives the binary one pipe for stdout and stderr, so a
	// panic's trace (stderr) lands in the output of the test it ended:
	// one writer for both is one pipe in every runner (OneStream).
	var merged lockedBuffer
	res, err := r.Run(ctx, sandbox.Command{Dir: pkgDir, Args: args, Env: append(env, gateEnv...), Timeout: limit, Stdout: &merged, Stderr: &merged})
	if err != nil {
		return res, nil, err
	}
	stream := convertTestOutput(pkg, merged.Bytes(), res.ExitCode == 0 && !res.TimedOut)
	// convertTestOutput names the package by its directory.
	judgeEnds(stream, mains, []modulePath{{root: ".", path: "."}}, gr.ends(), pattern)
	return res, stream, nil
}

// lockedBuffer is one buffer written from the two pipes of a process.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Bounded like the runner's own capture: past it, the output the
	// gate reads is cut off as go test's would be by the runner.
	if int64(b.buf.Len()) < int64(sandbox.DefaultOutputLimit) {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

// convertTestOutput turns a test binary's -test.v=test2json output into the
// stream `go test -json` would have printed for it, following
// cmd/internal/test2json: lines framed with ^V are the testing package's
// own ("=== RUN", "--- PASS: …", the final PASS or FAIL); everything else
// is output of the test named last, or of the subtest its indentation
// names. exitOK is whether the binary exited with status 0.
func convertTestOutput(pkg string, out []byte, exitOK bool) *Stream {
	c := &test2json{p: &PackageRun{Package: pkg}, open: map[string]*TestRun{}}
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if line != "" {
			c.line(line)
		}
	}
	c.flush(0)
	switch {
	case !exitOK:
		c.p.Action = "fail"
	case c.result != "":
		c.p.Action = c.result
	default:
		c.p.Action = "pass"
	}
	return &Stream{BuildOutput: map[string]string{}, Packages: []*PackageRun{c.p}}
}

// test2json is convertTestOutput's state between lines.
type test2json struct {
	p          *PackageRun
	open       map[string]*TestRun
	pending    []*TestRun // "--- PASS" reports not yet closed, outermost first
	current    string     // the test output goes to
	needMarker bool       // the testing package frames its lines: unframed ones are output
	seq        int
	result     string // the final PASS or FAIL, as "pass" or "fail"
}

// line converts one line of the binary's output.
func (c *test2json) line(line string) {
	framed := line[0] == 0x16
	if c.needMarker && !framed {
		c.output(line)
		return
	}
	if framed {
		line = line[1:]
	}
	trim := strings.TrimRight(line, "\r\n")
	if trim == "=== NAME" {
		trim, line = "=== NAME  ", "=== NAME  \n"
	}
	if trim == "PASS" || trim == "FAIL" || strings.HasPrefix(trim, "FAIL\t") {
		c.flush(0)
		c.needMarker = framed
		c.output(line)
		c.result = "fail"
		if trim == "PASS" {
			c.result = "pass"
		}
		return
	}
	if action, name, ok := updateLine(trim); ok {
		c.needMarker = framed
		c.flush(0)
		c.current = name
		switch action {
		case "run":
			c.seq++
			t := &TestRun{Name: name, Start: c.seq, End: c.seq}
			c.p.Tests = append(c.p.Tests, t)
			c.open[name] = t
			c.output(line)
		case "name":
		default:
			c.output(line)
		}
		return
	}
	c.report(line, trim, framed)
}

// report converts a "--- PASS: name" line at its indentation (a subtest's
// report), or, when the line is none, the output of the test its
// indentation names.
func (c *test2json) report(line, trim string, framed bool) {
	rest, indent := trim, 0
	for strings.HasPrefix(rest, "    ") {
		rest, indent = rest[4:], indent+1
	}
	action, name, elapsed, ok := reportLine(rest)
	if !ok || len(c.pending) < indent {
		if !ok && indent > 0 && indent <= len(c.pending) {
			c.current = c.pending[indent-1].Name
		}
		c.output(line)
		return
	}
	c.needMarker = framed
	c.flush(indent)
	t := c.open[name]
	if t == nil {
		c.seq++
		t = &TestRun{Name: name, Start: c.seq}
		c.p.Tests = append(c.p.Tests, t)
		c.open[name] = t
	}
	t.Action, t.Elapsed = action, elapsed
	c.pending = append(c.pending, t)
	c.current = name
	c.output(line)
}

// output is line as output of the current test, else of the package.
func (c *test2json) output(line string) {
	c.seq++
	if strings.Contains(line, timeoutMarker) {
		c.p.TimedOut = true
	}
	if c.current == "" {
		c.p.Output += line
		return
	}
	t := c.open[c.current]
	if t == nil {
		t = lastRun(c.p, c.current)
	}
	if t == nil {
		c.p.Output += line
		return
	}
	t.Output += line
	t.End = c.seq
}

// flush closes the reports pending below depth; output goes to no test
// until a line names one.
func (c *test2json) flush(depth int) {
	c.current = ""
	for len(c.pending) > depth {
		t := c.pending[len(c.pending)-1]
		c.pending = c.pending[:len(c.pending)-1]
		c.seq++
		t.End = c.seq
		delete(c.open, t.Name)
	}
}

// updateLine parses "=== RUN   name" and the other "=== " lines.
func updateLine(trim string) (action, name string, ok bool) {
	for _, u := range []string{"=== RUN   ", "=== PAUSE ", "=== CONT  ", "=== NAME  ", "=== PASS  ", "=== FAIL  ", "=== SKIP  ", "=== ATTR  ", "=== ARTIFACTS "} {
		if rest, found := strings.CutPrefix(trim, u); found {
			action = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(u, "=== ")))
			name = strings.TrimSpace(rest)
			if action == "attr" || action == "artifacts" {
				name, _, _ = strings.Cut(name, " ")
			}
			return action, name, true
		}
	}
	return "", "", false
}

// reportLine parses "--- PASS: name (0.01s)" and its FAIL and SKIP forms.
func reportLine(rest string) (action, name string, elapsed time.Duration, ok bool) {
	for _, r := range []string{"--- PASS: ", "--- FAIL: ", "--- SKIP: "} {
		if after, found := strings.CutPrefix(rest, r); found {
			action = strings.ToLower(r[4:8])
			name = strings.TrimSpace(after)
			if i := strings.Index(name, " ("); i >= 0 {
				if strings.HasSuffix(name, "s)") {
					if f, err := strconv.ParseFloat(name[i+2:len(name)-2], 64); err == nil {
						elapsed = seconds(f)
					}
				}
				name = name[:i]
			}
			return action, name, elapsed, true
		}
	}
	return "", "", 0, false
}
