package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/verify/secrets"
)

// TestSplitNextToAKey: a canary cut between two messages is redacted in
// both, and never refused because the letters of a key or a role beside
// it ("content" ends in t; many cores start with one) complete a window
// of it. Random canaries, many times: the collision depends on them.
func TestSplitNextToAKey(t *testing.T) {
	for range 300 {
		c, _ := secrets.NewCanary()
		red, err := NewRedactor([]string{c}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []int{len(c) / 2, len(c)/2 + 1, 12} {
			body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
				map[string]any{"role": "user", "content": "first half " + c[:h]},
				map[string]any{"role": "assistant", "content": c[h:] + " second half"}}})
			out, _, err := red.RedactRequest(body)
			if err != nil {
				t.Fatalf("%s cut at %d: %v", c, h, err)
			}
			core, _ := secrets.CanaryCore(c)
			if strings.Contains(string(out), core[:8]) && strings.Contains(string(out), core[len(core)-8:]) {
				t.Fatalf("%s cut at %d: sent %s", c, h, out)
			}
		}
	}
}
