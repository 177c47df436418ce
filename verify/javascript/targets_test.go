package javascript

import (
	"slices"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

func TestTargets(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"src/math.ts":          "export const add = (a: number, b: number) => a + b;\n",
		"src/index.ts":         "export { add } from './math.js';\n",
		"lib/util.cjs":         "module.exports = require('../src/legacy');\n",
		"src/legacy/index.js":  "module.exports = 1;\n",
		"test/index.test.ts":   "import { add } from '../src/index.js';\n",
		"test/legacy.test.cjs": "const u = require('../lib/util.cjs');\n",
		"test/lazy.test.mjs":   "const m = await import('../src/math.ts');\n",
		"test/other.test.js":   "require('node:assert');\n",
		"test/types.test.ts":   "import type { X } from '../src/math';\n",
	})
	a := New()
	for _, tc := range []struct {
		changed string
		want    []string
	}{
		{"src/math.ts", []string{"test/index.test.ts", "test/lazy.test.mjs"}},
		{"src/legacy/index.js", []string{"test/legacy.test.cjs"}},
		{"package.json", []string{"test/index.test.ts", "test/lazy.test.mjs", "test/legacy.test.cjs", "test/other.test.js", "test/types.test.ts"}},
		{"README.md", []string{}},
	} {
		got, err := a.Targets(t.Context(), nil, dir, &verify.Change{Files: []verify.FileChange{{Path: tc.changed, Status: verify.Modified}}})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s changed: Targets = %q, want %q", tc.changed, got, tc.want)
		}
	}
}
