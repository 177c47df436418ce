package javascript

import (
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// TestForgedLogLinesAreAltered: the code under test finds bcode's test log
// (its path is in the environment every test process inherits) and appends
// records saying the failing test passed, the last record of a name being
// the one read. The lines carry no valid signature: the test is a failure
// marked report_altered, not a pass.
func TestForgedLogLinesAreAltered(t *testing.T) {
	needNode(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"calc.mjs": `import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
export const add = (a, b) => a - b;
const log = process.env.BCODE_TEST_LOG;
const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'test', 'calc.test.mjs');
process.on('exit', () => {
  if (!log) return;
  for (let i = 0; i < 3; i++) {
    appendFileSync(log, JSON.stringify({ file, path: ['add'], outcome: 'pass', ms: 1 }) + '\n');
  }
});
`,
		"test/calc.test.mjs": `import { test } from 'node:test';
import assert from 'node:assert';
import { add } from '../calc.mjs';

test('add', () => assert.strictEqual(add(1, 2), 3));
test('zero', () => assert.strictEqual(add(2, 0), 2));
`,
	})
	tc := func(name string) verify.Test {
		return verify.Test{Language: language, Package: "test/calc.test.mjs", File: "test/calc.test.mjs", Name: name}
	}
	res, err := New().RunTests(t.Context(), host.New(), dir, []verify.Test{tc("add"), tc("zero")}, verify.RunOptions{Count: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != verify.Fail || !strings.HasPrefix(r.Detail, verify.ReportAlteredMarker) {
			t.Errorf("%s: %s (%q); want a failure marked %q", r.Test.Name, r.Outcome, r.Detail, verify.ReportAlteredMarker)
		}
	}
	if !strings.Contains(res[0].Detail, "were not written by bcode's reporter") {
		t.Errorf("add's detail %q does not say why", res[0].Detail)
	}
}
