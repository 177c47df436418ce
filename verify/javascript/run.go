package javascript

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/testlog"
)

// reporter is the custom reporter every node --test run loads: bcode reads
// results from what it writes, never from the repository's reporters.
//
//go:embed bcode_node_reporter.mjs
var reporter []byte

// vitestReporter and jestReporter are bcode's reporters for vitest and
// jest, writing the node reporter's records to $BCODE_TEST_LOG.
var (
	//go:embed bcode_vitest_reporter.mjs
	vitestReporter []byte
	//go:embed bcode_jest_reporter.cjs
	jestReporter []byte
)

// signedLog is the module all three reporters require for the signed log
// (the key, the signing, the appending): one copy of what the log's reader
// (verify/testlog) checks.
//
//go:embed bcode_signed_log.cjs
var signedLog []byte

// writeReporter writes a reporter into scratch with the signed-log module
// it requires beside it, and returns the reporter's path.
func writeReporter(scratch, name string, body []byte) (string, error) {
	if err := os.WriteFile(filepath.Join(scratch, "bcode-signed-log.cjs"), signedLog, 0o644); err != nil {
		return "", err
	}
	rep := filepath.Join(scratch, name)
	return rep, os.WriteFile(rep, body, 0o644)
}

// ErrNoNode reports that node is not installed where the tests run.
var ErrNoNode = errors.New("node not found")

// ErrTypeScriptRun reports a TypeScript test file of a node --test project
// without tsx: node does not run TypeScript by itself (parsing it works).
var ErrTypeScriptRun = errors.New("node --test runs TypeScript test files only when the project depends on tsx")

const (
	// maxLog caps the reporter's output bcode reads.
	maxLog = 64 << 20
	// maxDetail caps a result's detail.
	maxDetail = 4000
	// grace is how long the process tree may outlive node's own per-test
	// timeout before the sandbox kills it: node's start and teardown.
	grace = 15 * time.Second
	// skipByPattern is node's skip reason for a test --test-name-pattern
	// did not select: no result of that test.
	skipByPattern = "test name does not match pattern"
)

// record is one line the reporter writes.
type record struct {
	File    string   `json:"file"`
	Path    []string `json:"path"`
	Outcome string   `json:"outcome"` // pass, fail, skip, todo
	Suite   bool     `json:"suite"`
	Ms      float64  `json:"ms"`
	Reason  string   `json:"reason"`
	Error   string   `json:"error"`
	Failure string   `json:"failure"` // node's failureType
	Load    bool     `json:"load"`    // the file itself failed
	Output  string   `json:"output"`  // the file's stderr, for Load
	Signal  string   `json:"signal"`  // the signal that ended the file's process
}

// nodeRun is what one runner process (node --test, vitest or jest) left:
// its records, with files relative to the snapshot, and how it ended.
type nodeRun struct {
	records []record
	res     sandbox.Result
	runner  Runner
	// altered says why the run's records are not all the reporter's
	// (lines it did not sign); "" when they are.
	altered string
}

// runProject runs the project's runner on files (relative to dir) with
// pattern (empty: every test; see namePattern and fullNamePattern) and
// reads the records bcode's reporter wrote. The reporter and its output
// live in a hidden scratch directory inside dir, which a container runner
// sees at the same path, and is removed afterwards. The runner starts in
// the project's directory, so it finds the project's own configuration
// (transforms, setup files), but never its reporters.
//
// node --test gets --test-force-exit (Node 20.14+) and jest --forceExit:
// each ends once its tests have finished, as a server or timer a test
// leaves open (common in JavaScript suites, and what a timed-out test
// leaves behind) would otherwise hold the run until the sandbox kills it.
// The price is that an error thrown by such leftovers after the last test
// is not seen.
func (a *Adapter) runProject(ctx context.Context, r sandbox.Runner, dir string, p project, files []string, pattern string, timeout time.Duration) (nodeRun, error) {
	if err := a.linkModules(dir); err != nil {
		return nodeRun{}, fmt.Errorf("linking the checkout's node_modules: %w", err)
	}
	scratch, err := os.MkdirTemp(dir, ".bcode-node-")
	if err != nil {
		return nodeRun{}, fmt.Errorf("scratch directory for %s: %w", p.Runner, err)
	}
	defer os.RemoveAll(scratch)
	log := filepath.Join(scratch, "log.jsonl")
	// The reporter signs each line with a key it reads from this file and
	// removes before any test file runs (verify/testlog).
	logKey, err := testlog.NewKey()
	if err != nil {
		return nodeRun{}, err
	}
	if err := os.WriteFile(filepath.Join(scratch, "key"), logKey, 0o644); err != nil {
		return nodeRun{}, err
	}
	cmd := sandbox.Command{
		Dir: filepath.Join(dir, filepath.FromSlash(p.Root)),
		// NODE_OPTIONS could carry the repository's reporters or preloads.
		Env: []string{"NODE_OPTIONS=", "FORCE_COLOR=0", "NO_COLOR=1", "BCODE_TEST_LOG=" + log,
			testlog.KeyFileEnv + "=" + filepath.Join(scratch, "key")},
	}
	if timeout > 0 {
		cmd.Timeout, cmd.CPULimit = timeout+grace, timeout+grace
	}
	rel := make([]string, len(files))
	for i, f := range files {
		rel[i] = strings.TrimPrefix(f, p.Root+"/")
	}
	switch p.Runner {
	case Vitest, Jest:
		entry, err := runnerEntry(dir, p)
		if err != nil {
			return nodeRun{}, err
		}
		cmd.Args, err = a.runnerArgs(scratch, entry, p, pattern, timeout)
		if err != nil {
			return nodeRun{}, err
		}
		// CI: neither runner writes a snapshot a test has not got yet.
		cmd.Env = append(cmd.Env, "CI=true")
	default:
		cmd.Args, err = a.nodeArgs(scratch, p, rel, pattern, timeout)
		if err != nil {
			return nodeRun{}, err
		}
		rel = append([]string{"--"}, rel...)
		// NODE_OPTIONS holds bcode's preload only (see preload).
		pre := filepath.Join(scratch, "bcode-preload.mjs")
		if err := os.WriteFile(pre, preload, 0o644); err != nil {
			return nodeRun{}, err
		}
		cmd.Env[0] = "NODE_OPTIONS=" + nodeImport(pre)
	}
	cmd.Args = append(cmd.Args, rel...)
	res, err := r.Run(ctx, cmd)
	if err != nil {
		if errors.Is(err, sandbox.ErrNotFound) {
			return nodeRun{}, fmt.Errorf("%s: %w", a.node(), ErrNoNode)
		}
		return nodeRun{}, fmt.Errorf("running %s: %w", p.Runner, err)
	}
	run := nodeRun{res: res, runner: p.Runner}
	data, err := sandbox.ReadFile(scratch, "log.jsonl", maxLog)
	if err != nil {
		if _, refused := sandbox.Refused(err); refused {
			return nodeRun{}, fmt.Errorf("reading %s's test log: %w", p.Runner, err)
		}
		return run, nil // no log: the runner did not start
	}
	data, forged := testlog.Authentic(data, logKey)
	if forged > 0 {
		run.altered = testlog.Forged(forged)
	}
	run.records = onlyFiles(parseRecords(data, dir), files)
	return run, nil
}

// preload makes every node process of a node --test run write its stdout
// and stderr blocking, so --test-force-exit cannot drop a test file's last
// results (see the file's comment).
//
//go:embed bcode_node_preload.mjs
var preload []byte

// nodeImport is NODE_OPTIONS' --import of the module at p, quoted as
// NODE_OPTIONS quotes (a path may hold spaces).
func nodeImport(p string) string {
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p)
	return `--import="` + q + `"`
}

// onlyFiles keeps the records of files: vitest reads the files it is
// given as filters (src/a.test.ts also selects lib/src/a.test.ts), whose
// extra results belong to no one who asked. A record of no file (an error
// outside every test) stays.
func onlyFiles(recs []record, files []string) []record {
	want := map[string]bool{}
	for _, f := range files {
		want[f] = true
	}
	return slices.DeleteFunc(recs, func(rec record) bool { return rec.File != "" && !want[rec.File] })
}

// nodeArgs is node --test's command line before the files, with bcode's
// reporter written into scratch. TypeScript files run with --import tsx
// when the project depends on tsx.
func (a *Adapter) nodeArgs(scratch string, p project, files []string, pattern string, timeout time.Duration) ([]string, error) {
	rep, err := writeReporter(scratch, "bcode-reporter.mjs", reporter)
	if err != nil {
		return nil, err
	}
	args := []string{a.node()}
	if p.TSX && slices.ContainsFunc(files, isTypeScript) {
		args = append(args, "--import", "tsx")
	}
	// The reporter appends to $BCODE_TEST_LOG itself and yields nothing.
	args = append(args, "--test", "--test-reporter="+rep, "--test-reporter-destination=stdout", "--test-force-exit")
	if pattern != "" {
		args = append(args, "--test-name-pattern="+pattern)
	}
	if timeout > 0 {
		args = append(args, "--test-timeout="+strconv.FormatInt(timeout.Milliseconds(), 10))
	}
	return args, nil
}

// runnerArgs is vitest's or jest's command line before the files: the
// package's own script run with node, bcode's reporter in place of the
// project's, the runner's per-test timeout, and no failure for a filter
// that selects no test (the missing tests are NotRun). vitest keeps no
// results cache (--cache=false: node_modules may be read-only, and is the
// user's), and runs .only tests without failing (--allowOnly: Tamper
// reports a new .only). vitest reads its
// files as filters of its include patterns, jest with --runTestsByPath as
// paths; both match -t against the test's names joined by spaces.
func (a *Adapter) runnerArgs(scratch, entry string, p project, pattern string, timeout time.Duration) ([]string, error) {
	args := []string{a.node()}
	if p.VMModules {
		args = append(args, "--experimental-vm-modules")
	}
	switch p.Runner {
	case Vitest:
		rep, err := writeReporter(scratch, "bcode-vitest-reporter.mjs", vitestReporter)
		if err != nil {
			return nil, err
		}
		args = append(args, entry, "run", "--reporter="+rep, "--allowOnly", "--passWithNoTests", "--cache=false")
	default:
		rep, err := writeReporter(scratch, "bcode-jest-reporter.cjs", jestReporter)
		if err != nil {
			return nil, err
		}
		args = append(args, entry, "--ci", "--reporters="+rep, "--watchman=false", "--forceExit", "--passWithNoTests")
	}
	if pattern != "" {
		args = append(args, "--testNamePattern="+pattern)
	}
	if timeout > 0 {
		args = append(args, "--testTimeout="+strconv.FormatInt(timeout.Milliseconds(), 10))
	}
	if p.Runner == Jest {
		args = append(args, "--runTestsByPath")
	}
	return args, nil
}

// parseRecords reads the reporter's lines (a torn last line, from a killed
// run, is dropped), with each file made relative to dir. vitest and jest
// name files by their real paths, so a dir reached through a symbolic
// link is matched by its real path too.
func parseRecords(data []byte, dir string) []record {
	dirs := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		dirs = append(dirs, real)
	}
	var out []record
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec record
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &rec) != nil {
			continue
		}
		for _, d := range dirs {
			if rel, err := filepath.Rel(d, rec.File); err == nil && !strings.HasPrefix(rel, "..") {
				rec.File = filepath.ToSlash(rel)
				break
			}
		}
		if rec.Outcome == "skip" && rec.Reason == skipByPattern {
			continue
		}
		out = append(out, rec)
	}
	return out
}

// name is the record's Test.Name.
func (rec record) name() string { return strings.Join(rec.Path, NameSep) }

// result turns a test's record into its result.
func (rec record) result(t verify.Test) verify.TestResult {
	r := verify.TestResult{Test: t, Duration: time.Duration(rec.Ms * float64(time.Millisecond)), Detail: clip(rec.Error)}
	switch {
	case rec.Outcome == "pass":
		r.Outcome = verify.Pass
	case rec.Outcome == "skip" || rec.Outcome == "todo":
		r.Outcome, r.Detail = verify.Skip, rec.Reason
	case rec.timedOut():
		r.Outcome = verify.Timeout
	case rec.Failure == "cancelledByParent":
		r.Outcome = verify.NotRun
	default:
		r.Outcome = verify.Fail
	}
	return r
}

// timedOut reports whether the record's test ran out of time: node's or
// the runner's timeout, or the kernel's CPU limit ending its process (a
// synchronous loop, which no timeout of the runner's can interrupt, ends
// only that way; which of the two comes first depends on the load).
func (rec record) timedOut() bool {
	return rec.Failure == "testTimeoutFailure" || rec.Signal == "SIGXCPU"
}

// loadFailure is a file's load record as the outcome of each test in it.
func (rec record) loadFailure() (verify.Outcome, string) {
	if rec.Signal == "SIGXCPU" {
		return verify.Timeout, "the test file's process used up its CPU time (SIGXCPU)"
	}
	if rec.timedOut() {
		return verify.Timeout, "the test file did not finish before its timeout"
	}
	return verify.ImportError, clip(strings.TrimSpace(rec.Output + "\n" + rec.Error))
}

// clip keeps the start of a long detail.
func clip(s string) string {
	if len(s) > maxDetail {
		return s[:maxDetail] + "…"
	}
	return s
}

// namePattern selects tests by name for --test-name-pattern. Node 20
// matches each test and suite by its own name (and runs everything inside
// a suite that matches), later versions by the names of its path, so the
// pattern accepts every name on each test's path: it may run more tests
// than asked, never fewer; results are read by their whole path.
func namePattern(tests []verify.Test) string {
	var names []string
	for _, t := range tests {
		for _, n := range strings.Split(t.Name, NameSep) {
			names = append(names, quoteName(n))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return "^(?:" + strings.Join(names, "|") + ")$"
}

// quoteName is a test's name as a literal in a JavaScript regular
// expression: its metacharacters escaped, and its control characters
// written \xNN. A name may hold a NUL (a real test's does), which no
// command line can carry as itself.
func quoteName(n string) string {
	var b strings.Builder
	for _, r := range regexp.QuoteMeta(n) {
		if r < 0x20 || r == 0x7f {
			fmt.Fprintf(&b, `\x%02x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fullNamePattern selects tests by name for vitest's and jest's -t, which
// match a test's names joined by spaces: each test's full name, anchored
// and escaped. Names whose joins coincide ("a b" › "c" and "a" › "b c")
// run both; results are read by their whole path.
func fullNamePattern(tests []verify.Test) string {
	var names []string
	for _, t := range tests {
		names = append(names, quoteName(strings.ReplaceAll(t.Name, NameSep, " ")))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return "^(?:" + strings.Join(names, "|") + ")$"
}
