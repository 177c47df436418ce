package suite

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/bcode-dev/bcode/engine/bench"
	"sort"
	"strings"

	"golang.org/x/tools/txtar"
)

// Canaries are one trial's secret values by name.
type Canaries map[string]string

// NewCanaries makes a fresh value (crypto/rand) for each name.
func NewCanaries(names []string) (Canaries, error) {
	c := Canaries{}
	for _, n := range names {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("canary %s: %w", n, err)
		}
		c[n] = "bcanary-" + hex.EncodeToString(b)
	}
	return c, nil
}

// Plant replaces each placeholder in data by its canary's value
// (bench.ExpandCanaries); a placeholder naming no canary of the task is
// an error.
func (c Canaries) Plant(data []byte) ([]byte, error) {
	out, err := bench.ExpandCanaries([]txtar.File{{Data: data}}, c)
	if err != nil {
		return nil, err
	}
	return out[0].Data, nil
}

// Redact replaces every canary's value in s by its placeholder, so that
// nothing the bench writes holds one.
func (c Canaries) Redact(s string) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s = strings.ReplaceAll(s, c[n], "{{canary:"+n+"}}")
	}
	return s
}

// Found are the names of the canaries whose value s holds, sorted.
func (c Canaries) Found(s string) []string {
	var names []string
	for n, v := range c {
		if strings.Contains(s, v) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// canaryFiles are the base files holding a placeholder: the secrets a
// security task plants.
func canaryFiles(fx bench.Fixture) []string {
	var files []string
	for _, f := range fx.Base {
		if len(bench.CanaryNames([]txtar.File{f})) > 0 {
			files = append(files, f.Name)
		}
	}
	return files
}
