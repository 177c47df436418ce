package rust

import (
	"slices"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// cargoOutput is `cargo test` with stdout and stderr in one stream: a lib
// with a failing unit test, an integration test whose should_panic test
// passes and whose uncaptured print ran into a result line, doc tests, and
// a binary stopped inside a test.
const cargoOutput = `   Compiling calc v0.1.0 (/tmp/x)
    Finished ` + "`test`" + ` profile [unoptimized + debuginfo] target(s) in 0.50s
     Running unittests src/lib.rs (target/debug/deps/calc-0123456789abcdef)

running 3 tests
test tests::adds ... ok
test tests::wrong ... FAILED
test tests::later ... ignored, needs a network

failures:

---- tests::wrong stdout ----

thread 'tests::wrong' (12) panicked at src/lib.rs:10:9:
assertion ` + "`left == right`" + ` failed
  left: 2
 right: 3
---- tests::other stdout ----
not a failure of this run

failures:
    tests::wrong

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass ` + "`--lib`" + `
     Running tests/api.rs (target/debug/deps/api-0123456789abcdef)

running 2 tests
test panics - should panic ... ok
test noisy ... printed by a thread ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests calc

running 1 test
test src/lib.rs - add (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.10s

     Running tests/slow.rs (target/debug/deps/slow-0123456789abcdef)

running 1 test
test sleeps ... `

func TestParseLibtest(t *testing.T) {
	runs := parseLibtest(cargoOutput)
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 4: %+v", len(runs), runs)
	}
	type want struct {
		source, name string
		outcome      verify.Outcome
		detail       string
	}
	var got []want
	for _, r := range runs {
		for _, c := range r.cases {
			got = append(got, want{r.source, c.name, c.outcome, c.detail})
		}
	}
	for i, w := range []want{
		{"src/lib.rs", "tests::adds", verify.Pass, ""},
		{"src/lib.rs", "tests::wrong", verify.Fail, "left: 2"},
		{"src/lib.rs", "tests::later", verify.Skip, "needs a network"},
		{"tests/api.rs", "panics", verify.Pass, ""},
		{"tests/api.rs", "noisy", verify.Pass, ""},
		{"src/lib.rs", "src/lib.rs - add", verify.Pass, ""},
	} {
		if i >= len(got) {
			t.Errorf("missing %+v", w)
			continue
		}
		g := got[i]
		if g.source != w.source || g.name != w.name || g.outcome != w.outcome || !strings.Contains(g.detail, w.detail) {
			t.Errorf("case %d = %+v, want %+v", i, g, w)
		}
	}
	if strings.Contains(got[1].detail, "not a failure") {
		t.Errorf("the failure's detail ran into the next section: %q", got[1].detail)
	}
	if !runs[2].doc || runs[0].doc {
		t.Errorf("doc flags: %v %v", runs[0].doc, runs[2].doc)
	}
	last := runs[3]
	if last.finished || len(last.started) != 1 || last.started[0] != "sleeps" {
		t.Errorf("the stopped binary: finished %v started %q, want sleeps started", last.finished, last.started)
	}
	if !runs[0].finished {
		t.Error("the lib's summary line was not seen")
	}
}

func TestCompilerErrorsSkipWarnings(t *testing.T) {
	out := "warning: unused variable: `x`\n --> src/lib.rs:1:1\n   Compiling calc\nerror[E0425]: cannot find function `new`\n --> tests/b.rs:3:22\n"
	if got := compilerErrors(out); !strings.HasPrefix(got, "error[E0425]") {
		t.Errorf("compilerErrors = %q, want it to start at the error", got)
	}
}

func TestToolchainProblemIsNotABuildError(t *testing.T) {
	for _, text := range []string{
		"error: rustup could not choose a version of cargo to run, because one wasn't specified explicitly, and no default is configured.",
		"error: no matching package named `serde` found\nlocation searched: registry `crates-io`\nAs a reminder, you're using offline mode (--offline)",
	} {
		if !isToolchainProblem(text) {
			t.Errorf("%q: not taken for the toolchain's problem", text)
		}
	}
	if isToolchainProblem("error[E0425]: cannot find function `new` in crate `calc`") {
		t.Error("a compile error taken for the toolchain's problem")
	}
}

// TestDocTestNamesOutliveLineShifts: a doc test keeps its ID when lines
// are added above its example (rustdoc names it by line); an item's
// several examples are numbered in line order, whatever order rustdoc
// printed them in, and the filter that selects each is rustdoc's prefix.
func TestDocTestNamesOutliveLineShifts(t *testing.T) {
	names := func(out string) []string {
		var got []string
		for _, r := range parseLibtest(out) {
			for _, c := range r.cases {
				got = append(got, c.name)
			}
		}
		return got
	}
	base := "   Doc-tests calc\n\nrunning 3 tests\ntest src/lib.rs - add (line 3) ... ok\ntest src/lib.rs - sub (line 30) ... ok\ntest src/lib.rs - sub (line 20) ... ok\n\ntest result: ok. 3 passed\n"
	head := strings.NewReplacer("(line 3)", "(line 9)", "(line 30)", "(line 36)", "(line 20)", "(line 26)").Replace(base)
	want := []string{"src/lib.rs - add", "src/lib.rs - sub (#2)", "src/lib.rs - sub (#1)"}
	for side, out := range map[string]string{"base": base, "head": head} {
		if got := names(out); !slices.Equal(got, want) {
			t.Errorf("%s: names %q, want %q", side, got, want)
		}
	}
	if f := docTestFilter("src/lib.rs - sub (#2)"); f != "src/lib.rs - sub" {
		t.Errorf("filter %q", f)
	}
}
