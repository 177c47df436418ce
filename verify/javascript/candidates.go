package javascript

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// testDirs are directories whose files belong to the tests: helpers,
// fixtures, mocks and data beside or below the test files.
var testDirs = map[string]bool{
	"test": true, "tests": true, "__tests__": true, "__mocks__": true, "__fixtures__": true,
	"fixtures": true, "testdata": true, "testing": true, "spec": true,
}

// IsTestSupport reports whether p belongs to the tests only: test files,
// anything under a test directory (tests/, __tests__/, __mocks__/,
// fixtures/, testdata/, …), and files named for tests wherever they live
// (test-utils.js, testHelpers.ts, setupTests.js, *.spec.js), and the
// runners' own files (jest.setup.js, jest.config.js, vitest.setup.ts,
// vitest.config.ts).
func (a *Adapter) IsTestSupport(p string) bool {
	if a.IsTestFile(p) {
		return true
	}
	for _, el := range strings.Split(path.Dir(p), "/") {
		if testDirs[el] {
			return true
		}
	}
	if !a.Owns(p) {
		return false
	}
	base := strings.ToLower(path.Base(p))
	stem := strings.TrimSuffix(base, path.Ext(base))
	return strings.HasPrefix(stem, "test") || strings.HasSuffix(stem, ".spec") || strings.HasPrefix(stem, "setuptests") ||
		strings.Contains(stem, "test-util") || strings.Contains(stem, "test_util") || strings.Contains(stem, "testutil") ||
		strings.HasPrefix(stem, "jest.") || strings.HasPrefix(stem, "vitest.")
}

// Candidates implements verify.Adapter as the Python adapter does: the
// units are the changed test files that exist on the head, and, for each
// other changed support file (a helper, fixture or mock), the test files
// below its directory, or below the nearest directory above it that has
// any.
func (a *Adapter) Candidates(_ context.Context, _ sandbox.Runner, dir string, change *verify.Change) (verify.Candidates, error) {
	var c verify.Candidates
	var support []verify.FileChange
	for _, f := range change.Files {
		if a.IsTestSupport(f.Path) {
			c.Support = append(c.Support, f.Path)
			support = append(support, f)
		}
	}
	if len(support) == 0 {
		return c, nil
	}
	files, err := a.jsFiles(dir)
	if err != nil {
		return c, fmt.Errorf("listing javascript files in %s: %w", dir, err)
	}
	var tests []string
	for _, f := range files {
		if a.IsTestFile(f) {
			tests = append(tests, f)
		}
	}
	paths := make([]string, len(support))
	for i, f := range support {
		paths[i] = f.Path
	}
	c.Units = verify.SupportUnits(tests, paths, a.IsTestFile)
	return c, nil
}
