package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify"
)

// TestRunCoveringTests: a mutant's covering tests run through the
// language's adapter, Go and Python alike (the server once ran its own
// `go test -run` and refused Python); a name that is no test's is refused
// before anything runs.
func TestRunCoveringTests(t *testing.T) {
	testenv.Go(t)
	ctx := context.Background()
	eng := app.Open(app.Options{})
	repo := testrepo.FromTxtar(t, evidenceRepo)
	res, err := eng.RunCoveringTests(ctx, app.CoveringTestsRequest{Dir: repo.Dir, File: "num.go", Tests: []string{"TestDouble"}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Outcome != verify.Pass || res[0].Test.Name != "TestDouble" {
		t.Fatalf("Go: %+v", res)
	}
	for _, bad := range []string{"-run=.", "Test Double", "", "1Test"} {
		if _, err := eng.RunCoveringTests(ctx, app.CoveringTestsRequest{Dir: repo.Dir, File: "num.go", Tests: []string{bad}}); !errors.Is(err, app.ErrNotATestName) {
			t.Errorf("Go test %q: %v, want ErrNotATestName", bad, err)
		}
	}

	py := testenv.Pytest(t)
	pyRepo := testrepo.FromTxtar(t, `
-- .bcode/config.toml --
[gate]
python = "`+py+`"
-- calc.py --
def small(x):
    return x < 10
-- tests/test_calc.py --
from calc import small

def test_small():
    assert small(3) and not small(10)

def test_other():
    assert False
`)
	res, err = eng.RunCoveringTests(ctx, app.CoveringTestsRequest{Dir: pyRepo.Dir, File: "calc.py", Tests: []string{"tests/test_calc.py::test_small"}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Outcome != verify.Pass {
		t.Fatalf("Python: %+v", res)
	}
	if _, err := eng.RunCoveringTests(ctx, app.CoveringTestsRequest{Dir: pyRepo.Dir, File: "calc.py", Tests: []string{"test_small"}}); !errors.Is(err, app.ErrNotATestName) {
		t.Errorf("a Python name without its file: %v, want ErrNotATestName", err)
	}
}

// TestRunCoveringTestsJavaScript: a JavaScript mutant's covering tests,
// named file::describe path › test as the evidence report names them
// (spaces and all), run through verify/javascript.
func TestRunCoveringTestsJavaScript(t *testing.T) {
	testenv.Node(t)
	ctx := context.Background()
	eng := app.Open(app.Options{})
	repo := testrepo.FromTxtar(t, `
-- calc.js --
module.exports = { small: (x) => x < 10 };
-- test/calc.test.js --
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { small } = require('../calc.js');
describe('small', () => {
  it('says yes below ten', () => assert.ok(small(3) && !small(10)));
  it('is wrong', () => assert.fail('no'));
});
`)
	res, err := eng.RunCoveringTests(ctx, app.CoveringTestsRequest{Dir: repo.Dir, File: "calc.js", Tests: []string{"test/calc.test.js::small › says yes below ten"}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Outcome != verify.Pass || res[0].Test.Language != "javascript" {
		t.Fatalf("JavaScript: %+v", res)
	}
	for _, bad := range []string{"small › says yes below ten", "-x.js::a", "test/calc.test.js::a\nb"} {
		if _, err := eng.RunCoveringTests(ctx, app.CoveringTestsRequest{Dir: repo.Dir, File: "calc.js", Tests: []string{bad}}); !errors.Is(err, app.ErrNotATestName) {
			t.Errorf("JavaScript test %q: %v, want ErrNotATestName", bad, err)
		}
	}
}
