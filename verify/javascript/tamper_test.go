package javascript

import (
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify"
)

// change is a change to files, each given as [base, head] ("" for a side
// without the file).
func change(files map[string][2]string) *verify.Change {
	c := &verify.Change{}
	for p, sides := range files {
		f := verify.FileChange{Path: p, Status: verify.Modified}
		if sides[0] != "" {
			f.Base = []byte(sides[0])
		} else {
			f.Status = verify.Added
		}
		if sides[1] != "" {
			f.Head = []byte(sides[1])
		} else {
			f.Status = verify.Deleted
		}
		c.Files = append(c.Files, f)
	}
	return c
}

func TestTamper(t *testing.T) {
	const base = `describe('calc', () => {
  it('a', () => {});
  it('b', () => {});
});
test('c', () => {});
test('d', () => {});
`
	c := change(map[string][2]string{
		"calc.test.js": {base, `describe.skip('calc', () => {
  it('a', () => {});
  it('b', () => {});
});
test.only('c', () => {});
test('d', { todo: 'later' }, () => {});
`},
		"gone.test.js":  {"test('e', () => {});\n", ""},
		"added.test.js": {"", "test.only('f', () => {});\n"},
		"calc.js":       {"f();\n", "test.skip('not a test file', () => {});\n"},
	})
	got, err := New().Tamper(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"calc.test.js " + verify.FindingTestSkipped + " calc › a",
		"calc.test.js " + verify.FindingTestSkipped + " calc › b",
		"calc.test.js " + verify.FindingTestSkipped + " \"d\"",
		"calc.test.js " + verify.FindingTestSkipped + " \"c\" is newly marked .only",
		"gone.test.js " + verify.FindingTestDeleted + " \"e\"",
		"added.test.js " + verify.FindingTestSkipped + " \"f\" is newly marked .only",
	}
	for _, w := range want {
		p, rest, _ := strings.Cut(w, " ")
		code, text, _ := strings.Cut(rest, " ")
		found := false
		for _, f := range got {
			found = found || (f.Path == p && f.Code == code && strings.Contains(f.Message, text))
		}
		if !found {
			t.Errorf("no %s at %s naming %s; got %+v", code, p, text, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d findings, want %d: %+v", len(got), len(want), got)
	}
}

func TestChangedTestsTypeScript(t *testing.T) {
	c := change(map[string][2]string{
		"calc.test.ts": {
			"test('same', (n: number) => { f(n) });\ntest('changed', () => { f(1) });\n",
			"test('changed', () => { f(2) });\ntest('same', (n: string) => {\n  f(n)\n});\ntest('new', () => {});\n",
		},
	})
	got, err := New().ChangedTests(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tc := range got {
		ids = append(ids, tc.Name)
	}
	if strings.Join(ids, ",") != "changed,new" {
		t.Errorf("ChangedTests = %v, want changed,new", ids)
	}
}
