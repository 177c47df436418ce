package suite

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/tools/txtar"
)

// ErrFixture: a tasks-suite fixture is malformed.
var ErrFixture = errors.New("tasks: fixture")

// TaskFixture is a tasks-suite task's repository: the files at the base,
// the reference solution (files written over the base; Deleted removes
// one) and the hidden check files, written on the clean snapshot only
// after the agent finished. Paths are slash-separated, relative to the
// repository root.
//
// The catalog's loader reads these from the task's txtar (sections base/,
// reference/, hidden/); until it lands, ReadTaskFixture does.
type TaskFixture struct {
	Base, Reference, Hidden []txtar.File
}

// Deleted is a reference file's whole content when the solution deletes
// the file.
const Deleted = "<deleted>"

// IsDeleted reports whether a reference file deletes its path.
func IsDeleted(f txtar.File) bool { return strings.TrimSpace(string(f.Data)) == Deleted }

// ReadTaskFixture reads a tasks-suite fixture file.
func ReadTaskFixture(file string) (TaskFixture, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return TaskFixture{}, fmt.Errorf("%w: %v", ErrFixture, err)
	}
	return ParseTaskFixture(file, data)
}

// ParseTaskFixture splits a txtar into its sections; name is for errors.
func ParseTaskFixture(name string, data []byte) (TaskFixture, error) {
	var fx TaskFixture
	for _, f := range txtar.Parse(data).Files {
		section, rel, ok := strings.Cut(f.Name, "/")
		if !ok || rel == "" {
			return fx, fmt.Errorf("%w: %s: %q is in no section (base/, reference/, hidden/)", ErrFixture, name, f.Name)
		}
		f.Name = rel
		switch section {
		case "base":
			fx.Base = append(fx.Base, f)
		case "reference":
			fx.Reference = append(fx.Reference, f)
		case "hidden":
			fx.Hidden = append(fx.Hidden, f)
		default:
			return fx, fmt.Errorf("%w: %s: unknown section %q of %q (base/, reference/, hidden/)", ErrFixture, name, section, f.Name)
		}
	}
	if len(fx.Base) == 0 {
		return fx, fmt.Errorf("%w: %s: no base/ files", ErrFixture, name)
	}
	return fx, nil
}

// canaryRef is a canary's placeholder in a fixture's files.
var canaryRef = regexp.MustCompile(`\{\{canary:([A-Za-z0-9_.-]+)\}\}`)

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

// Plant replaces each placeholder in data by its canary's value; a
// placeholder naming no canary of the task is an error.
func (c Canaries) Plant(data []byte) ([]byte, error) {
	var missing string
	out := canaryRef.ReplaceAllFunc(data, func(m []byte) []byte {
		name := string(canaryRef.FindSubmatch(m)[1])
		v, ok := c[name]
		if !ok {
			missing = name
			return m
		}
		return []byte(v)
	})
	if missing != "" {
		return nil, fmt.Errorf("%w: placeholder {{canary:%s}} names no canary of the task", ErrFixture, missing)
	}
	return out, nil
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
func canaryFiles(fx TaskFixture) []string {
	var files []string
	for _, f := range fx.Base {
		if canaryRef.Match(f.Data) {
			files = append(files, f.Name)
		}
	}
	return files
}
