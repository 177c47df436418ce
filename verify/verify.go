// Package verify decides whether a change is verified: its new or modified
// tests fail on the base commit and pass with the change, the suite passes,
// and nothing was tampered with.
//
// The root package holds the types every part of verification shares (the
// change, tests and their outcomes, findings, the report) and the Gate that
// runs the decision. Language support sits behind the Adapter interface
// (verify/golang, verify/python); mutation evidence, tamper rules and secret
// scanning have packages of their own.
package verify

import (
	"context"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// Status says how a file changed between base and head.
type Status string

const (
	Added    Status = "added"
	Modified Status = "modified"
	Deleted  Status = "deleted"
)

// LineRange is an inclusive, 1-based range of lines on the head side.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// FileChange is one file that differs between base and head, with both
// contents loaded (nil where the side has no such file).
type FileChange struct {
	Path   string `json:"path"` // slash-separated, relative to the repository root
	Status Status `json:"status"`
	Base   []byte `json:"-"`
	Head   []byte `json:"-"`
	// BaseMode and HeadMode are git modes ("100644", "100755", "120000"
	// for a symbolic link); empty where the side has no such file.
	BaseMode string `json:"base_mode,omitempty"`
	HeadMode string `json:"head_mode,omitempty"`
	// Binary is set when either side is not text; such files are never
	// parsed as source.
	Binary bool `json:"binary,omitempty"`
	// Changed lists the head lines added or modified (empty for deletions).
	Changed []LineRange `json:"changed,omitempty"`
}

// Change is the unit of verification: everything that differs from Base to
// Head, and a way to lay either side out on disk.
type Change struct {
	Base  string // commit id of the base
	Head  string // commit or tree id of the head (the working tree is snapshotted to a tree)
	Files []FileChange
	// Workspace materializes snapshots outside the user's checkout.
	Workspace Workspace
}

// File returns the change to path, if any.
func (c *Change) File(path string) (FileChange, bool) {
	for _, f := range c.Files {
		if f.Path == path {
			return f, true
		}
	}
	return FileChange{}, false
}

// Side names one end of a change.
type Side string

const (
	BaseSide Side = "base"
	HeadSide Side = "head"
)

// Workspace lays out clean copies of a change's sides for tests to run in.
// Every directory it returns is fresh, outside the user's checkout, and
// removed by Close.
type Workspace interface {
	// Materialize writes the tree of side to a new directory and then lays
	// overlay over it (a nil Head deletes the file). It returns the directory.
	Materialize(ctx context.Context, side Side, overlay []FileChange) (string, error)
	// ReadBase returns a file's content at the base commit (for settings that
	// must never come from the head), or fs.ErrNotExist.
	ReadBase(ctx context.Context, path string) ([]byte, error)
	// Close removes every directory Materialize made.
	Close() error
}

// Outcome is what one run of one test did.
type Outcome string

const (
	Pass Outcome = "pass"
	// Fail means the test ran and failed by assertion (or by a panic or an
	// exception in the code under test): a real behavioural failure.
	Fail Outcome = "fail"
	Skip Outcome = "skip"
	// BuildError: the test's package or file does not compile (Go).
	BuildError Outcome = "build_error"
	// ImportError: the test module cannot be collected or imported (Python).
	ImportError Outcome = "import_error"
	// MissingSymbol: the test failed because a name it uses does not exist
	// on this side (Python AttributeError/NameError, or a call whose
	// signature does not match).
	MissingSymbol Outcome = "missing_symbol"
	Timeout       Outcome = "timeout"
	// EnvError: the toolchain or the runner failed, not the test.
	EnvError Outcome = "env_error"
	// NotRun: the runner produced no result for this test (not found,
	// or the run stopped before it).
	NotRun Outcome = "not_run"
	// Flaky: repeated runs disagreed.
	Flaky Outcome = "flaky"
)

// Test names one test function.
type Test struct {
	Language string `json:"language"` // "go", "python"
	// Package is where the runner runs it: a Go package directory relative
	// to the repository root ("./internal/x", "." for the root), or the
	// Python test file.
	Package string `json:"package"`
	File    string `json:"file"` // the file that defines it
	// Name is the runner's name: "TestFoo", "TestFoo/sub_case",
	// "ExampleBar"; "test_x" or "TestClass::test_y" for pytest.
	Name string `json:"name"`
}

// ID is a stable, unique key for the test across runs and sides.
func (t Test) ID() string { return t.Language + ":" + t.Package + ":" + t.Name }

// TestResult is one run of one test.
type TestResult struct {
	Test     Test          `json:"test"`
	Outcome  Outcome       `json:"outcome"`
	Detail   string        `json:"detail,omitempty"` // a short excerpt of why (first failure lines, compiler error)
	Duration time.Duration `json:"duration_ns"`
}

// SuiteResult is the outcome of a whole (or targeted) test suite run.
type SuiteResult struct {
	Outcome  Outcome       `json:"outcome"` // Pass, Fail, BuildError, Timeout, EnvError, NotRun
	Targets  []string      `json:"targets,omitempty"`
	Failed   []string      `json:"failed,omitempty"` // failing test or package names
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Results holds one result per test ID that reported in this run:
	// every test, Go subtest, pytest parametrized case and unittest
	// method, read from per-test events (never from a package's exit
	// status). The gate's pass-to-pass and tampering rules work on it.
	Results []TestResult `json:"-"`
	// Units are the Go packages or Python test files the run reached, each
	// with Pass when its tests ran (whatever they did) or the reason none
	// could run (BuildError, ImportError, Timeout, EnvError).
	Units []UnitResult `json:"-"`
}

// UnitResult is whether one Go package or Python test file could run.
type UnitResult struct {
	Unit    string  `json:"unit"` // as Test.Package names it
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
}

// Candidates is what an adapter says about a change's tests, given the head
// snapshot: which changed files belong to the tests only, and which units
// hold the test IDs that are candidates for credit.
type Candidates struct {
	// Support lists the changed files that only tests use: test files,
	// helpers, conftest.py and plugins, testdata, test-only packages. The
	// head's versions are laid over the base for "fail before", and the
	// base's over the head for "old tests on new code".
	Support []string
	// Units are the Go packages ("./dir") or Python test files whose every
	// test ID is a candidate, in the form RunSuite accepts as targets.
	Units []string
}

// Finding is one tamper (or secret) finding on the diff.
type Finding struct {
	Code    string `json:"code"` // e.g. "test_deleted", "test_skipped", "protected_path"
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`

	testID string // the test a run-time finding is about
	// underSupport marks a changed expectation found with the base's test
	// support (supportDecides): the credit of the test it is about is no
	// evidence, as the test passes only with the changed support.
	underSupport bool
}

// Tamper finding codes shared by every adapter, so reports read the same
// whatever the language.
const (
	FindingTestDeleted    = "test_deleted"
	FindingTestSkipped    = "test_skipped"
	FindingTestInfra      = "test_infra_changed"
	FindingProtectedPath  = "protected_path"
	FindingCIChanged      = "ci_changed"
	FindingConfigChanged  = "config_changed"
	FindingSecret         = "secret"
	FindingBinaryTestFile = "binary_test_file"
	// FindingTestVanished: a test ID that passed on the untouched base was
	// skipped, xfailed, deselected, not collected or not run on the head,
	// whatever made it so (found at run time, not in the diff).
	FindingTestVanished = "test_vanished"
	// FindingReportAltered: a pytest plugin or hook from the repository
	// turned a failure into another outcome.
	FindingReportAltered = "report_altered"
	// FindingChangedExpectations: the base's version of a test, run against
	// the head, fails where it passed on the base: the change rewrote what
	// the test pinned.
	FindingChangedExpectations = "changed_expectations"
	// FindingRefusedRead: a file the gate had to read (a report or
	// profile the tests wrote, a file of the tree) was refused by the
	// confined reader: a link, a device, fifo, socket or directory, a path
	// out of its root, or a file over its cap. Tests do not leave such
	// things where bcode reads; the change did.
	FindingRefusedRead = "refused_read"
	// FindingUnsupported: a changed file in a language bcode has no
	// adapter for; its tests were not run (Report.Unsupported).
	FindingUnsupported = "unsupported"
)

// RunOptions tune one batch of test runs.
type RunOptions struct {
	Count   int           // times each test runs (>= 1)
	Timeout time.Duration // for the whole batch of one package or file
	// Separate runs each of the Count rounds in a process of its own
	// (one test binary start, one pytest), never -count=N in one
	// process, where state a test keeps in memory or a seed taken once
	// would make every round alike.
	Separate bool
}

// Adapter is one language's support. The gate calls nothing
// language-specific except through it, so a new language is one new package.
type Adapter interface {
	// Language is the short name used in Test.Language ("go", "python").
	Language() string
	// Owns reports whether path is a source or test file of this language.
	Owns(path string) bool
	// IsTestFile reports whether path holds tests.
	IsTestFile(path string) bool
	// ChangedTests lists the tests the change adds or modifies: test
	// functions in changed test files whose source differs by syntax tree,
	// not by line numbers. Deleted tests are not listed (Tamper reports them).
	ChangedTests(ctx context.Context, change *Change) ([]Test, error)
	// RunTests runs tests in dir (a materialized snapshot) opts.Count times
	// and returns every result, Count per test. Tests that produce no result
	// get NotRun; a package that does not build gets BuildError for each of
	// its tests. The error is for failures of the runner itself.
	RunTests(ctx context.Context, r sandbox.Runner, dir string, tests []Test, opts RunOptions) ([]TestResult, error)
	// Targets lists what the change reaches in dir, in the form RunSuite
	// accepts: Go package patterns of the reverse import closure, Python
	// test files that import changed modules.
	Targets(ctx context.Context, r sandbox.Runner, dir string, change *Change) ([]string, error)
	// RunSuite runs targets (nil: the whole suite of this language) in dir.
	// A language with no tests in the repository returns Pass with no targets.
	RunSuite(ctx context.Context, r sandbox.Runner, dir string, targets []string, timeout time.Duration) (SuiteResult, error)
	// Tamper reports language-specific tampering on the change: deleted
	// tests, newly skipped tests, changed test infrastructure.
	Tamper(ctx context.Context, change *Change) ([]Finding, error)
	// Candidates reads the head snapshot in dir to say which changed files
	// are test support and which units hold the candidate test IDs.
	Candidates(ctx context.Context, r sandbox.Runner, dir string, change *Change) (Candidates, error)
}

// TestSplicer is implemented by adapters whose tests can live in a code
// file (Rust's #[cfg(test)] modules). The gate's mixed snapshots take such
// a file's code from one side and its tests from the other: SpliceTests
// returns code's file with the tests of tests, or false when p is not
// such a file or its tests cannot be told apart from its code.
type TestSplicer interface {
	SpliceTests(p string, code, tests []byte) ([]byte, bool)
}

// BaseFailureJudge is implemented by adapters that can tell, from the
// change, whether a failure on the base that looks like a missing name is
// one: a name the change adds (no credit) or a name the bug itself got
// wrong (an AttributeError raised inside the code under test: credit).
type BaseFailureJudge interface {
	JudgeBaseFailure(change *Change, r TestResult) TestResult
}

// TestDeclarer is implemented by adapters whose test files may hold
// helpers alone (Go's _test.go files): DeclaresTests says whether src,
// the test file at path, declares a test of its own. A changed test file
// that declares none is test support: the gate runs the head's tests under
// its base version, so a helper the change made lax is seen (a test that
// passes on the head only with it has had what it checks changed under
// it).
type TestDeclarer interface {
	DeclaresTests(path string, src []byte) bool
}

// SetupDescriber is implemented by adapters that can say what a test file
// does to the code under test before any test runs (a Go init function, a
// package variable's initializer or a TestMain assigning a package
// variable). The gate names it beside a base test that passes on the head
// only with a test file the change adds.
type SetupDescriber interface {
	// DescribeSetup reads src, the test file at path, and says what it
	// assigns before the tests run ("init assigns absImpl"), or "".
	DescribeSetup(path string, src []byte) string
}

// Preparer is implemented by adapters with set-up work that needs only a
// snapshot (choosing the interpreter that runs the tests): the gate starts
// it as soon as the head's snapshot exists, beside its other work, instead
// of in front of the first run.
type Preparer interface {
	Prepare(ctx context.Context, r sandbox.Runner, dir string)
}

// BinaryKeeper is implemented by adapters whose suite runs can keep the
// test binaries they build and run, so the fail-to-pass repeats that follow
// start the very binary that gave the first result instead of building it
// a second time.
type BinaryKeeper interface {
	// RunSuiteKeeping is RunSuite that keeps the test binaries of the
	// units in keep (Candidates' form) in dir, for RunTests with
	// Separate set to find.
	RunSuiteKeeping(ctx context.Context, r sandbox.Runner, dir string, targets, keep []string, timeout time.Duration) (SuiteResult, error)
	// DropBinaries removes what RunSuiteKeeping and RunTests left in dir,
	// before anything copies the snapshot.
	DropBinaries(dir string)
}

// Progress receives human-readable steps of long operations. The CLI prints
// them; the LSP server turns them into $/progress.
type Progress interface {
	Step(format string, args ...any)
}

// NoProgress discards progress.
type NoProgress struct{}

func (NoProgress) Step(string, ...any) {}
