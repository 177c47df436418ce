package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/internal/testenv"
)

// TestDemo runs the README's first command: three real changes, three
// verdicts, in the order the demo's introduction promises.
func TestDemo(t *testing.T) {
	testenv.Go(t)
	testenv.Git(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"demo", "--state", t.TempDir()}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	verdicts := regexp.MustCompile(`(?m)^(VERIFIED|GREEN|TAMPERED|FAILED|ERROR) `).FindAllStringSubmatch(out.String(), -1)
	var got []string
	for _, v := range verdicts {
		got = append(got, v[1])
	}
	if strings.Join(got, " ") != "VERIFIED GREEN TAMPERED" {
		t.Fatalf("verdicts %v, want VERIFIED GREEN TAMPERED:\n%s", got, out.String())
	}
	for _, want := range []string{
		"TestAllowStopsAtMax", // the credited test of the fix
		"TestAllowFirst passed on the base and is skipped on the head",
		"(BASE: the base commit with the change's test files laid over it)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
