package javascript

import (
	"context"
	"fmt"

	"github.com/bcode-dev/bcode/verify"
)

// ChangedTests implements verify.Adapter: the tests of the head's changed
// test files that the base lacks or whose body's syntax differs from the
// base's (suites are not tests; a test inside a changed suite is listed
// when its own body changed).
func (a *Adapter) ChangedTests(ctx context.Context, change *verify.Change) ([]verify.Test, error) {
	var out []verify.Test
	for _, f := range change.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if f.Status == verify.Deleted || f.Binary || f.Head == nil || !a.IsTestFile(f.Path) {
			continue
		}
		head, err := staticTests(f.Path, f.Head)
		if err != nil {
			return nil, fmt.Errorf("cannot parse the head's test file: %w", err)
		}
		base := map[string]string{}
		if f.Base != nil {
			// A base that does not parse has no tests to compare with:
			// every test of the head is new.
			tests, _ := staticTests(f.Path, f.Base)
			base = bodies(tests)
		}
		for name, body := range bodies(head) {
			if old, ok := base[name]; ok && old == body {
				continue
			}
			out = append(out, verify.Test{Language: language, Package: f.Path, File: f.Path, Name: name})
		}
	}
	sortTests(out)
	return out, nil
}

// bodies maps each test (not suite) by name to its body; tests that share
// a name share one entry, their bodies in source order.
func bodies(tests []staticTest) map[string]string {
	out := map[string]string{}
	for _, t := range tests {
		if t.Suite {
			continue
		}
		if prev, ok := out[t.Name]; ok {
			out[t.Name] = prev + "\x00" + t.Body
			continue
		}
		out[t.Name] = t.Body
	}
	return out
}
