package python

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/testlog"
)

// liveLogPlugin is loaded into every pytest run (`-p bcode_pytest_log`)
// so that a run killed at its timeout still tells which tests finished.
//
//go:embed bcode_pytest_log.py
var liveLogPlugin []byte

// pytestBoot starts every pytest run: an isolated interpreter that loads
// pytest and bcode's plugin from the system before any snapshot path is
// on sys.path (bcode_pytest_boot.py says how).
//
//go:embed bcode_pytest_boot.py
var pytestBoot string

// PytestBoot is the bootstrap's source, for the other processes that start
// pytest by the same rule (mutation evidence imports it beside its script).
func PytestBoot() []byte { return []byte(pytestBoot) }

// childSite is written as sitecustomize.py and usercustomize.py first on
// the PYTHONPATH of the processes a test starts, so that the snapshot's
// own start-up files do not run there either.
//
//go:embed bcode_child_site.py
var childSite []byte

// pytest's exit codes (pytest.ExitCode).
const (
	exitOK          = 0
	exitTestsFailed = 1
	exitInterrupted = 2
	exitInternal    = 3
	exitUsage       = 4
	exitNoTests     = 5
)

// maxRounds bounds the reruns after pytest refuses node ids it cannot find
// (it then runs nothing, so the others are retried without them).
const maxRounds = 4

// RunTests implements verify.Adapter: each test runs opts.Count times, in
// separate pytest invocations, and gets one result per invocation.
func (a *Adapter) RunTests(ctx context.Context, r sandbox.Runner, dir string, tests []verify.Test, opts verify.RunOptions) ([]verify.TestResult, error) {
	if len(tests) == 0 {
		return nil, nil
	}
	count := max(opts.Count, 1)
	for _, t := range tests {
		if err := checkTest(t); err != nil {
			return nil, err
		}
	}
	py, err := a.interpreter(ctx, r, dir)
	if err != nil {
		if !errors.Is(err, ErrNoPytest) {
			return nil, err
		}
		var out []verify.TestResult
		for range count {
			for _, t := range tests {
				out = append(out, verify.TestResult{Test: t, Outcome: verify.EnvError, Detail: err.Error()})
			}
		}
		return out, nil
	}
	var out []verify.TestResult
	for range count {
		res, err := a.runOnce(ctx, r, dir, py, tests, opts.Timeout)
		if err != nil {
			return out, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// checkTest refuses tests that cannot name a pytest node safely.
func checkTest(t verify.Test) error {
	f := t.File
	if f == "" {
		f = t.Package
	}
	switch {
	case f == "" || t.Name == "":
		return fmt.Errorf("python test %q in %q: file and name are required", t.Name, f)
	case path.IsAbs(f) || f != path.Clean(f) || f == ".." || strings.HasPrefix(f, "../"):
		return fmt.Errorf("python test file %q: not a clean path inside the repository", f)
	case strings.HasPrefix(f, "-") || strings.HasPrefix(t.Name, "-"):
		return fmt.Errorf("python test %q in %q: names must not start with '-'", t.Name, f)
	case strings.ContainsAny(f+t.Name, "\x00\n"):
		return fmt.Errorf("python test %q in %q: control characters in the name", t.Name, f)
	}
	return nil
}

func fileOf(t verify.Test) string {
	if t.File != "" {
		return t.File
	}
	return t.Package
}

// runOnce runs every test once and returns one result per test, in order.
func (a *Adapter) runOnce(ctx context.Context, r sandbox.Runner, dir, py string, tests []verify.Test, timeout time.Duration) ([]verify.TestResult, error) {
	o := onceRun{tests: tests, results: make([]*verify.TestResult, len(tests)), timeout: timeout}
	pending := o.present(dir)
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for round := 0; round < maxRounds && len(pending) > 0; round++ {
		left := time.Duration(0)
		if !deadline.IsZero() {
			left = time.Until(deadline)
			if left <= 0 {
				break
			}
		}
		asked := len(pending)
		ids := make([]string, len(pending))
		for j, i := range pending {
			ids[j] = fileOf(tests[i]) + "::" + tests[i].Name
		}
		run, err := a.pytest(ctx, r, dir, py, ids, left)
		if err != nil {
			return nil, err
		}
		pending = o.fromRun(run, pending)
		if len(pending) == 0 || run.res.TimedOut {
			break
		}
		pending = o.byExitStatus(run, pending, asked)
	}
	return o.final(deadline), nil
}

// onceRun is runOnce's results so far, by the tests' index (nil: none yet).
type onceRun struct {
	tests   []verify.Test
	results []*verify.TestResult
	timeout time.Duration
}

// present gives the tests whose file is missing here their result, and
// returns the others.
func (o *onceRun) present(dir string) (pending []int) {
	for i, t := range o.tests {
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(fileOf(t)))); err != nil || fi.IsDir() {
			o.results[i] = &verify.TestResult{Test: t, Outcome: verify.NotRun, Detail: "test file " + fileOf(t) + " does not exist here"}
			continue
		}
		pending = append(pending, i)
	}
	return pending
}

// fromRun takes what a run says of the pending tests (their cases, their
// module's collection error, the run's timeout), and returns those it
// said nothing of.
func (o *onceRun) fromRun(run pytestRun, pending []int) []int {
	collect := collectionErrors(run.cases)
	for _, i := range pending {
		t := o.tests[i]
		if res, ok := aggregate(t, casesFor(run.cases, t)); ok {
			o.results[i] = &res
		} else if c, ok := collect[dottedPath(fileOf(t))]; ok {
			oc, d := Classify(c)
			o.results[i] = &verify.TestResult{Test: t, Outcome: oc, Detail: d}
		} else if run.res.TimedOut {
			o.results[i] = &verify.TestResult{Test: t, Outcome: verify.Timeout, Detail: fmt.Sprintf("did not finish before the %s timeout", o.timeout)}
		}
		if run.altered != "" {
			if o.results[i] == nil {
				o.results[i] = &verify.TestResult{Test: t}
			}
			testlog.MarkAltered(o.results[i], run.altered)
		}
	}
	var still []int
	for _, i := range pending {
		if o.results[i] == nil {
			still = append(still, i)
		}
	}
	return still
}

// setAll gives every test of idx the same result.
func (o *onceRun) setAll(idx []int, outcome verify.Outcome, detail string) {
	for _, i := range idx {
		o.results[i] = &verify.TestResult{Test: o.tests[i], Outcome: outcome, Detail: detail}
	}
}

// byExitStatus decides the tests a run gave no result by pytest's exit
// status, and returns the ones to run again.
func (o *onceRun) byExitStatus(run pytestRun, pending []int, asked int) []int {
	output := string(run.res.Stdout) + "\n" + string(run.res.Stderr)
	switch run.res.ExitCode {
	case exitOK, exitTestsFailed, exitNoTests:
		o.setAll(pending, verify.NotRun, "pytest collected no such test")
		return nil
	case exitUsage:
		if c, ok := conftestFailure(output); ok {
			oc, d := Classify(c)
			o.setAll(pending, oc, d)
			return nil
		}
		// pytest refuses the whole run when a node id does not exist
		// (or sits in a module that failed to collect, decided above):
		// drop those and run the rest again.
		missing := notFound(output)
		var retry []int
		for _, i := range pending {
			id := fileOf(o.tests[i]) + "::" + o.tests[i].Name
			if missing.has(id) {
				o.results[i] = &verify.TestResult{Test: o.tests[i], Outcome: verify.NotRun, Detail: "pytest: not found: " + id}
			} else {
				retry = append(retry, i)
			}
		}
		if len(retry) == asked { // nothing was decided: a real usage error
			o.setAll(pending, verify.EnvError, "pytest usage error (exit 4): "+lastLines(output, 20))
			return nil
		}
		return retry
	default:
		o.setAll(pending, verify.EnvError, fmt.Sprintf("pytest exited %d: %s", run.res.ExitCode, lastLines(output, 20)))
		return nil
	}
}

// final is one result per test, in order: a test left without one did not
// run before the deadline, or pytest gave it none.
func (o *onceRun) final(deadline time.Time) []verify.TestResult {
	out := make([]verify.TestResult, len(o.tests))
	for i, t := range o.tests {
		switch {
		case o.results[i] != nil:
			out[i] = *o.results[i]
		case !deadline.IsZero() && time.Now().After(deadline):
			out[i] = verify.TestResult{Test: t, Outcome: verify.Timeout, Detail: fmt.Sprintf("did not run before the %s timeout", o.timeout)}
		default:
			out[i] = verify.TestResult{Test: t, Outcome: verify.NotRun, Detail: "pytest produced no result"}
		}
	}
	return out
}

// casesFor picks the cases of one test: every parameter set of it.
func casesFor(cases []Case, t verify.Test) []Case {
	k := testKey(fileOf(t), t.Name)
	var out []Case
	for _, c := range cases {
		if c.key() == k {
			out = append(out, c)
		}
	}
	return out
}

// rank orders outcomes for folding parameter sets into one: any failure
// fails the test, and a missing name or module outranks a plain failure so
// that a test is never credited for failing where it could not even run.
var rank = map[verify.Outcome]int{
	verify.NotRun: 0, verify.Skip: 1, verify.Pass: 2, verify.Fail: 3,
	verify.MissingSymbol: 4, verify.ImportError: 5, verify.Timeout: 6, verify.EnvError: 7,
}

// aggregate folds a test's cases into one result.
func aggregate(t verify.Test, cases []Case) (verify.TestResult, bool) {
	if len(cases) == 0 {
		return verify.TestResult{}, false
	}
	res := verify.TestResult{Test: t, Outcome: verify.NotRun}
	for _, c := range cases {
		o, d := Classify(c)
		res.Duration += c.Time
		if rank[o] > rank[res.Outcome] {
			res.Outcome = o
			res.Detail = d
			if strings.Contains(c.Name, "[") && d != "" {
				res.Detail = c.Name + ": " + d
			}
		}
	}
	return res, true
}

// collectionErrors maps dotted module paths to the case saying they could
// not be collected.
func collectionErrors(cases []Case) map[string]Case {
	out := map[string]Case{}
	for _, c := range cases {
		if c.isCollectionError() {
			out[c.Name] = c
		}
	}
	return out
}

// conftestFailure recognizes a conftest.py that does not import: pytest
// then stops before collecting anything (exit 4, no report), and every
// test below it is as uncollectable as a test module that fails to import.
func conftestFailure(output string) (Case, bool) {
	i := strings.Index(output, "while loading conftest")
	if i < 0 {
		return Case{}, false
	}
	start := strings.LastIndexByte(output[:i], '\n') + 1
	return Case{Status: Errored, Message: "collection failure", Text: firstLines(output[start:], 20)}, true
}

// idSet holds node ids pytest said it could not find. pytest prints them
// as absolute paths, so ids match by suffix.
type idSet []string

func (s idSet) has(id string) bool {
	for _, x := range s {
		if x == id || strings.HasSuffix(x, "/"+id) {
			return true
		}
	}
	return false
}

// notFound reads pytest's "ERROR: not found: /abs/tests/test_a.py::test_x"
// lines.
func notFound(output string) idSet {
	var out idSet
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if id, ok := strings.CutPrefix(line, "ERROR: not found: "); ok {
			out = append(out, strings.TrimSpace(id))
		}
	}
	return out
}

// pytestRun is what one pytest invocation left behind.
type pytestRun struct {
	res   sandbox.Result
	cases []Case
	log   []byte // bcode's own per-test record (bcode_pytest_log), signed lines only
	// altered says why the run's outcomes are not its tests' own (see
	// logAltered); "" when they are.
	altered string
}

// pytest runs pytest on args in dir, as `python -m pytest` would but
// isolated from the snapshot's start-up files (pytestCommand). Its JUnit
// report and live log go to a hidden scratch directory inside dir (pytest
// does not recurse into dot-directories), which is removed afterwards: a
// container runner sees dir at the same path, it may not see the host's
// /tmp.
func (a *Adapter) pytest(ctx context.Context, r sandbox.Runner, dir, py string, args []string, timeout time.Duration) (pytestRun, error) {
	scratch, err := os.MkdirTemp(dir, ".bcode-pytest-")
	if err != nil {
		return pytestRun{}, fmt.Errorf("scratch directory for pytest: %w", err)
	}
	defer os.RemoveAll(scratch)
	key, err := testlog.NewKey()
	if err != nil {
		return pytestRun{}, err
	}
	files := map[string][]byte{"bcode_pytest_log.py": liveLogPlugin, "key": key}
	if !a.StartupFiles {
		files["sitecustomize.py"], files["usercustomize.py"] = childSite, childSite
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(scratch, name), data, 0o644); err != nil {
			return pytestRun{}, err
		}
	}
	res, err := r.Run(ctx, a.pytestCommand(dir, py, scratch, args, timeout))
	if err != nil {
		if errors.Is(err, sandbox.ErrNotFound) {
			return pytestRun{}, fmt.Errorf("%s: %w", py, ErrNoPytest)
		}
		return pytestRun{}, fmt.Errorf("running pytest: %w", err)
	}
	run := pytestRun{res: res}
	// The tests ran the change's code, which could have replaced the log
	// (a link, a fifo, a file over the cap): that is the gate's finding,
	// not a missing log. It could also have written lines into it, or
	// replaced the code deciding outcomes: only the plugin's signed lines
	// count, and either is the run's altered report. pytest's JUnit report
	// is not read: it has no signature.
	data, err := sandbox.ReadFile(scratch, "log.jsonl", maxJUnitBytes)
	if _, refused := sandbox.Refused(err); refused {
		return pytestRun{}, fmt.Errorf("reading pytest's live log: %w", err)
	}
	var forged int
	run.log, forged = testlog.Authentic(data, key)
	run.altered = logAltered(run.log, forged)
	run.cases = parseLiveLog(run.log)
	return run, nil
}

// liveRecord is one line the live-log plugin writes.
type liveRecord struct {
	NodeID   string  `json:"nodeid"`
	When     string  `json:"when"`
	Outcome  string  `json:"outcome"`
	XFail    bool    `json:"xfail"`
	Message  string  `json:"message"`
	Text     string  `json:"text"`
	Duration float64 `json:"duration"`
}

// parseLiveLog turns the plugin's records into cases shaped like the JUnit
// report's; a torn last line (the process was killed mid-write) is dropped.
func parseLiveLog(data []byte) []Case {
	var out []Case
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec liveRecord
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &rec) != nil {
			continue
		}
		k := mangle(rec.NodeID)
		_, params, _ := strings.Cut(rec.NodeID, "[")
		name := k.name
		if params != "" {
			name += "[" + params
		}
		c := Case{ClassName: k.class, Name: name, Message: rec.Message, Text: rec.Text}
		if rec.Duration > 0 && rec.Duration < 1e9 {
			c.Time = time.Duration(rec.Duration * float64(time.Second))
		}
		switch {
		case rec.When == "collected" || rec.When == "deselected" || rec.When == "altered":
			continue // not a test's outcome
		case rec.When == "collect":
			c.ClassName, c.Name, c.Status, c.Message = "", dottedPath(rec.NodeID), Errored, "collection failure"
		default:
			c.Status, c.Type = recordStatus(rec.When, rec.Outcome, rec.XFail)
		}
		out = append(out, c)
	}
	return out
}

// pytestCommand is one pytest run: `python -I` (isolated: no PYTHON*
// variables, no user site, neither the working directory nor a script's
// directory on sys.path) runs pytestBoot, which imports pytest and bcode's
// plugin from the system and only then puts the snapshot's paths on
// sys.path, after the standard library and before site-packages. -B and
// -u stand for the variables -I ignores.
//
// The processes a test starts are not isolated: they get the snapshot's
// paths on PYTHONPATH as before (a test that runs `python -m pkg` finds
// the snapshot's pkg), behind the scratch directory whose sitecustomize.py
// and usercustomize.py shadow the snapshot's (childSite), and without the
// user site.
func (a *Adapter) pytestCommand(dir, py, scratch string, args []string, timeout time.Duration) sandbox.Command {
	paths := snapshotPaths(dir)
	argv := []string{py, "-I", "-B", "-u", "-c", pytestBoot, filepath.Join(scratch, "bcode_pytest_log.py")}
	if a.StartupFiles {
		argv = append(argv, "-startup")
	}
	argv = append(argv, paths...)
	argv = append(argv, "--", "-p", "no:cacheprovider", "-p", "bcode_pytest_log",
		"-q", "-rA", "--rootdir="+dir, "--continue-on-collection-errors")
	argv = append(argv, "--")
	argv = append(argv, args...)
	return sandbox.Command{
		Dir:  dir,
		Args: argv,
		Env: []string{
			"PYTHONPATH=" + strings.Join(append([]string{scratch}, paths...), string(os.PathListSeparator)),
			// The snapshot is on PYTHONPATH; the working directory need
			// not be (Python 3.11+).
			"PYTHONSAFEPATH=1",
			// HOME is shared by every run: what a test leaves in its user
			// site (a .pth, a usercustomize) must not run in later ones.
			"PYTHONNOUSERSITE=1",
			"BCODE_PYTEST_LOG=" + filepath.Join(scratch, "log.jsonl"),
			testlog.KeyFileEnv + "=" + filepath.Join(scratch, "key"),
			"PYTHONDONTWRITEBYTECODE=1",
			"PYTHONUNBUFFERED=1",
		},
		Timeout: timeout,
	}
}

// snapshotPaths puts the snapshot's src/ (a src layout) first, then the
// snapshot itself: ahead of anything an editable install adds (.pth
// entries and import finders come after site-packages), so each snapshot
// imports its own code, never the user's checkout.
func snapshotPaths(dir string) []string {
	var parts []string
	if fi, err := os.Stat(filepath.Join(dir, "src")); err == nil && fi.IsDir() {
		parts = append(parts, filepath.Join(dir, "src"))
	}
	return append(parts, dir)
}
