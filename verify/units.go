package verify

import (
	"path"
	"sort"
	"strings"
)

// SupportUnits are the test files a change's test support reaches, for
// adapters whose unit is a test file (Python, JavaScript): a changed test
// file that exists on this side is its own unit; any other support file
// (a helper, conftest, fixture, mock) reaches the test files in its
// directory and below, or below the nearest directory above it that holds
// any. tests are this side's test files and support the changed support
// files' paths (slash-separated); isTest tells a test file. Sorted.
func SupportUnits(tests, support []string, isTest func(string) bool) []string {
	present := map[string]bool{}
	for _, t := range tests {
		present[t] = true
	}
	units := map[string]bool{}
	for _, p := range support {
		if isTest(p) {
			if present[p] {
				units[p] = true
			}
			continue
		}
		for d := path.Dir(p); ; d = path.Dir(d) {
			below := testsBelow(tests, d)
			for _, t := range below {
				units[t] = true
			}
			if len(below) > 0 || d == "." || d == "/" {
				break
			}
		}
	}
	out := make([]string, 0, len(units))
	for u := range units {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// testsBelow lists the tests in directory d or below it.
func testsBelow(tests []string, d string) []string {
	if d == "." {
		return tests
	}
	var out []string
	for _, t := range tests {
		if strings.HasPrefix(t, d+"/") {
			out = append(out, t)
		}
	}
	return out
}
