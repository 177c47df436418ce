package javascript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// hidingKeys are the runner settings that decide which tests run or how a
// failure counts: a change to one can hide tests.
var hidingKeys = []string{
	"testPathIgnorePatterns", "testMatch", "testRegex", "roots", "modulePathIgnorePatterns", "passWithNoTests",
	"include", "exclude", "includeSource", "testNamePattern", "allowOnly", "retry", "bail",
	"setupFiles", "setupFilesAfterEnv", "globalSetup", "moduleNameMapper", "alias", "transform",
}

// configFindings reports changes to the files that decide how vitest and
// jest collect and run tests, as the Python adapter reports pytest's
// (verify.FindingTestInfra): any change to a vitest.config.* or
// jest.config.*, a change to the test block of a vite.config.*, and a
// change to package.json's "jest" key or its "test" script. The message
// names the settings that can hide tests when those are what changed.
func configFindings(f verify.FileChange) []verify.Finding {
	if inNodeModules(f.Path) {
		return nil
	}
	finding := func(msg string) []verify.Finding {
		line := 0
		if len(f.Changed) > 0 {
			line = f.Changed[0].Start
		}
		return []verify.Finding{{Code: verify.FindingTestInfra, Path: f.Path, Line: line, Message: msg}}
	}
	base := path.Base(f.Path)
	switch {
	case slices.Contains(vitestConfigs, base) || slices.Contains(jestConfigs, base):
		runner := "vitest"
		if slices.Contains(jestConfigs, base) {
			runner = "jest"
		}
		return finding(fmt.Sprintf("%s configuration changed: %s %s%s", runner, f.Path, f.Status, hiding(f.Base, f.Head)))
	case slices.Contains(viteConfigs, base):
		b, h := testBlockOf(f.Base), testBlockOf(f.Head)
		if b != h {
			return finding(fmt.Sprintf("vitest's test block of %s changed%s", f.Path, hiding([]byte(b), []byte(h))))
		}
	case base == "package.json":
		var out []verify.Finding
		b, h := packageTestConfig(f.Base), packageTestConfig(f.Head)
		if b.jest != h.jest {
			out = append(out, finding(fmt.Sprintf("jest configuration in %s changed%s", f.Path, hiding([]byte(b.jest), []byte(h.jest))))...)
		}
		if b.script != h.script {
			out = append(out, finding(fmt.Sprintf("the test script of %s changed: %q was %q", f.Path, h.script, b.script))...)
		}
		return out
	}
	return nil
}

// hiding names the hiding settings whose values differ between two
// configuration sources, for a finding's message.
func hiding(base, head []byte) string {
	var changed []string
	for _, k := range hidingKeys {
		if settingOf(base, k) != settingOf(head, k) {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	return " (" + strings.Join(changed, ", ") + " changed: they decide which tests run)"
}

// packageTest is what of a package.json configures its tests.
type packageTest struct {
	jest   string // the "jest" key, compacted
	script string // scripts.test
}

func packageTestConfig(src []byte) packageTest {
	var pj struct {
		Jest    json.RawMessage   `json:"jest"`
		Scripts map[string]string `json:"scripts"`
	}
	if len(src) == 0 || json.Unmarshal(src, &pj) != nil {
		return packageTest{}
	}
	var b bytes.Buffer
	if len(pj.Jest) > 0 && json.Compact(&b, pj.Jest) != nil {
		b.Reset()
		b.Write(pj.Jest)
	}
	return packageTest{jest: b.String(), script: pj.Scripts["test"]}
}

// keyPattern finds `key:` or `"key":` in a configuration source.
func keyPattern(key string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s{,])["']?` + regexp.QuoteMeta(key) + `["']?\s*:`)
}

var keyPatterns = map[string]*regexp.Regexp{}

func init() {
	for _, k := range append(slices.Clone(hidingKeys), "test") {
		keyPatterns[k] = keyPattern(k)
	}
}

// settingOf is the value of every `key:` in src, each without blanks,
// joined: what the key is set to, however it is laid out.
func settingOf(src []byte, key string) string {
	var vals []string
	for _, m := range keyPatterns[key].FindAllIndex(src, -1) {
		vals = append(vals, squeeze(valueAt(src, m[1])))
	}
	return strings.Join(vals, "\x00")
}

// testBlockOf is the value of vite's test option in a vite config.
func testBlockOf(src []byte) string { return settingOf(src, "test") }

// valueAt reads the value that starts at i: a bracketed value to its
// matching bracket (strings and template literals skipped), anything else
// to the next comma, closing brace or end of line.
func valueAt(src []byte, i int) []byte {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	start, depth := i, 0
	for ; i < len(src); i++ {
		switch c := src[i]; c {
		case '\'', '"', '`':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '[', '{', '(':
			depth++
		case ']', '}', ')':
			if depth == 0 {
				return src[start:i]
			}
			depth--
			if depth == 0 {
				return src[start : i+1]
			}
		case ',', '\n':
			if depth == 0 {
				return src[start:i]
			}
		}
	}
	return src[start:min(i, len(src))]
}

// squeeze drops blanks, so layout alone is no change.
func squeeze(b []byte) string {
	return strings.Join(strings.Fields(string(b)), "")
}
