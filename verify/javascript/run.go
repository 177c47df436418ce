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
)

// reporter is the custom reporter every node --test run loads: bcode reads
// results from what it writes, never from the repository's reporters.
//
//go:embed bcode_node_reporter.mjs
var reporter []byte

// preload makes every node process of a run write its stdout and stderr
// blocking, so --test-force-exit cannot drop a test file's last results
// (see the file's comment).
//
//go:embed bcode_node_preload.mjs
var preload []byte

// ErrNoNode reports that node is not installed where the tests run.
var ErrNoNode = errors.New("node not found")

// ErrTypeScriptRun reports a TypeScript test file: the node runner does
// not run TypeScript yet (parsing it works).
var ErrTypeScriptRun = errors.New("running TypeScript test files is not supported yet")

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
}

// nodeRun is what one node --test process left: its records, with files
// relative to the snapshot, and how it ended.
type nodeRun struct {
	records []record
	res     sandbox.Result
}

// runNode runs node --test on files (relative to dir) with pattern (empty:
// every test) and reads the reporter's records. The reporter and its
// output live in a hidden scratch directory inside dir, which a container
// runner sees at the same path, and is removed afterwards.
//
// --test-force-exit (Node 20.14+) ends each file's process once its tests
// have finished: a server or timer a test leaves open (common in
// JavaScript suites, and what a timed-out test leaves behind) would
// otherwise hold the run until the sandbox kills it. The price is that an
// error thrown by such leftovers after the last test is not seen.
func (a *Adapter) runNode(ctx context.Context, r sandbox.Runner, dir string, files []string, pattern string, timeout time.Duration) (nodeRun, error) {
	if err := a.linkModules(dir); err != nil {
		return nodeRun{}, fmt.Errorf("linking the checkout's node_modules: %w", err)
	}
	scratch, err := os.MkdirTemp(dir, ".bcode-node-")
	if err != nil {
		return nodeRun{}, fmt.Errorf("scratch directory for node: %w", err)
	}
	defer os.RemoveAll(scratch)
	rep := filepath.Join(scratch, "bcode-reporter.mjs")
	if err := os.WriteFile(rep, reporter, 0o644); err != nil {
		return nodeRun{}, err
	}
	pre := filepath.Join(scratch, "bcode-preload.mjs")
	if err := os.WriteFile(pre, preload, 0o644); err != nil {
		return nodeRun{}, err
	}
	// The reporter writes its log itself, synchronously (see the
	// reporter's comment); node's own destination gets nothing.
	logPath := filepath.Join(scratch, "log.jsonl")
	args := []string{a.node(), "--test", "--test-reporter=" + rep, "--test-reporter-destination=" + filepath.Join(scratch, "unused"), "--test-force-exit"}
	if pattern != "" {
		args = append(args, "--test-name-pattern="+pattern)
	}
	cmd := sandbox.Command{
		Dir: dir,
		// NODE_OPTIONS could carry the repository's reporters or preloads:
		// it holds bcode's preload only.
		Env:  []string{"NODE_OPTIONS=" + nodeImport(pre), "FORCE_COLOR=0", "NO_COLOR=1", "BCODE_NODE_LOG=" + logPath},
		Args: args,
	}
	if timeout > 0 {
		cmd.Args = append(cmd.Args, "--test-timeout="+strconv.FormatInt(timeout.Milliseconds(), 10))
		cmd.Timeout, cmd.CPULimit = timeout+grace, timeout+grace
	}
	cmd.Args = append(append(cmd.Args, "--"), files...)
	res, err := r.Run(ctx, cmd)
	if err != nil {
		if errors.Is(err, sandbox.ErrNotFound) {
			return nodeRun{}, fmt.Errorf("%s: %w", a.node(), ErrNoNode)
		}
		return nodeRun{}, fmt.Errorf("running node --test: %w", err)
	}
	run := nodeRun{res: res}
	data, err := sandbox.ReadFile(scratch, "log.jsonl", maxLog)
	if err != nil {
		if _, refused := sandbox.Refused(err); refused {
			return nodeRun{}, fmt.Errorf("reading node's test log: %w", err)
		}
		return run, nil // no log: node did not start the runner
	}
	run.records = parseRecords(data, dir)
	return run, nil
}

// nodeImport is NODE_OPTIONS' --import of the module at p, quoted as
// NODE_OPTIONS quotes (a path may hold spaces).
func nodeImport(p string) string {
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p)
	return `--import="` + q + `"`
}

// parseRecords reads the reporter's lines (a torn last line, from a killed
// run, is dropped), with each file made relative to dir.
func parseRecords(data []byte, dir string) []record {
	var out []record
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec record
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &rec) != nil {
			continue
		}
		if rel, err := filepath.Rel(dir, rec.File); err == nil && !strings.HasPrefix(rel, "..") {
			rec.File = filepath.ToSlash(rel)
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
	case rec.Failure == "testTimeoutFailure":
		r.Outcome = verify.Timeout
	case rec.Failure == "cancelledByParent":
		r.Outcome = verify.NotRun
	default:
		r.Outcome = verify.Fail
	}
	return r
}

// loadFailure is a file's load record as the outcome of each test in it.
func (rec record) loadFailure() (verify.Outcome, string) {
	if rec.Failure == "testTimeoutFailure" {
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
			names = append(names, regexp.QuoteMeta(n))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return "^(?:" + strings.Join(names, "|") + ")$"
}
