package bench

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/verify"
)

// ErrFixture is a tasks-suite fixture that cannot be read or is malformed.
var ErrFixture = errors.New("bench: fixture")

// Deleted is the content of a reference/ file that deletes the base's
// file of that path.
const Deleted = "<deleted>"

// Fixture is a tasks-suite task's repository (docs/evaluation.md, "The
// catalog"): Base is the repository at its base commit, what the agent
// starts from; Reference the reference solution, files written over the
// base (content Deleted deletes); Hidden the hidden check files, written
// on the clean snapshot only after the agent finishes. Paths are relative
// to the repository root. Comment is the txtar's comment, for people.
type Fixture struct {
	Comment   string
	Base      []txtar.File
	Reference []txtar.File
	Hidden    []txtar.File
}

// LoadFixture reads task t's fixture (a tasks-suite txtar) under moduleRoot.
func LoadFixture(moduleRoot string, t Task) (Fixture, error) {
	if !cleanRel(t.Fixture) {
		return Fixture{}, fmt.Errorf("%w: task %s: fixture %q is not a path inside the checkout", ErrFixture, t.ID, t.Fixture)
	}
	ar, err := txtar.ParseFile(fixturePath(moduleRoot, t))
	if err != nil {
		return Fixture{}, fmt.Errorf("%w: task %s: %v", ErrFixture, t.ID, err)
	}
	fx, err := ParseFixture(ar)
	if err != nil {
		return Fixture{}, fmt.Errorf("%w: task %s (%s): %v", ErrFixture, t.ID, t.Fixture, err)
	}
	return fx, nil
}

// ParseFixture sorts an archive's files into their sections. Every file
// must be base/<path>, reference/<path> or hidden/<path>, with a path
// inside the repository, at most once per section; base/ must not be
// empty, and a Deleted reference file must delete a base file.
func ParseFixture(ar *txtar.Archive) (Fixture, error) {
	fx := Fixture{Comment: string(ar.Comment)}
	seen := map[string]bool{}
	for _, f := range ar.Files {
		section, rel, ok := strings.Cut(f.Name, "/")
		if !ok || !cleanRel(rel) {
			return fx, fmt.Errorf("file %q is not base/, reference/ or hidden/ followed by a path inside the repository", f.Name)
		}
		if seen[f.Name] {
			return fx, fmt.Errorf("file %q appears twice", f.Name)
		}
		seen[f.Name] = true
		nf := txtar.File{Name: rel, Data: f.Data}
		switch section {
		case "base":
			fx.Base = append(fx.Base, nf)
		case "reference":
			fx.Reference = append(fx.Reference, nf)
		case "hidden":
			fx.Hidden = append(fx.Hidden, nf)
		default:
			return fx, fmt.Errorf("file %q: section %q is not base, reference or hidden", f.Name, section)
		}
	}
	if len(fx.Base) == 0 {
		return fx, errors.New("no base/ files: the agent would start from an empty repository")
	}
	for _, f := range fx.Reference {
		if IsDeleted(f) && !hasFile(fx.Base, f.Name) {
			return fx, fmt.Errorf("reference/%s deletes a file the base does not have", f.Name)
		}
	}
	return fx, nil
}

// IsDeleted reports whether a reference file deletes its path.
func IsDeleted(f txtar.File) bool { return string(bytes.TrimSpace(f.Data)) == Deleted }

// cleanRel reports whether rel is a clean slash path inside a repository,
// outside its .git.
func cleanRel(rel string) bool {
	return rel != "" && path.Clean(rel) == rel && !path.IsAbs(rel) && rel != ".." &&
		!strings.HasPrefix(rel, "../") && rel != ".git" && !strings.HasPrefix(rel, ".git/")
}

func hasFile(files []txtar.File, name string) bool {
	for _, f := range files {
		if f.Name == name {
			return true
		}
	}
	return false
}

// Applied is base with over's files written over it (a Deleted file
// removes its path), sorted by path: the repository the reference
// solution, or the hidden files, make of the base.
func Applied(base, over []txtar.File) []txtar.File {
	byName := map[string][]byte{}
	for _, f := range base {
		byName[f.Name] = f.Data
	}
	for _, f := range over {
		if IsDeleted(f) {
			delete(byName, f.Name)
			continue
		}
		byName[f.Name] = f.Data
	}
	out := make([]txtar.File, 0, len(byName))
	for name, data := range byName {
		out = append(out, txtar.File{Name: name, Data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var canaryRE = regexp.MustCompile(`\{\{canary:([A-Za-z0-9_-]+)\}\}`)

// CanaryNames are the canary placeholders ({{canary:NAME}}) in files, each
// name once, sorted.
func CanaryNames(files []txtar.File) []string {
	seen := map[string]bool{}
	for _, f := range files {
		for _, m := range canaryRE.FindAllSubmatch(f.Data, -1) {
			seen[string(m[1])] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ExpandCanaries replaces each {{canary:NAME}} with values[NAME], the
// run's fresh value; a name values lacks is an error, so no placeholder
// reaches the agent as a value nobody watches for.
func ExpandCanaries(files []txtar.File, values map[string]string) ([]txtar.File, error) {
	out := make([]txtar.File, len(files))
	var missing []string
	for i, f := range files {
		data := canaryRE.ReplaceAllFunc(f.Data, func(m []byte) []byte {
			name := string(canaryRE.FindSubmatch(m)[1])
			v, ok := values[name]
			if !ok {
				missing = append(missing, name)
				return m
			}
			return []byte(v)
		})
		out[i] = txtar.File{Name: f.Name, Data: data}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: no value for canary %s", ErrFixture, strings.Join(missing, ", "))
	}
	return out, nil
}

// ParseCheck reads one hidden check into the tests it selects: a Go or
// pytest command as verify.ParseTestCommand reads it; `cargo test --lib
// NAME` or `cargo test --test TARGET NAME` for a Rust test (NAME exact, as
// libtest prints it: "tests::demangle_osx"); `node --test FILE
// --test-name-pattern 'NAME'` for a JavaScript test (NAME the test's
// exact name, quoted when it has spaces).
func ParseCheck(cmd string) ([]verify.Test, error) {
	fields := strings.Fields(cmd)
	switch {
	case len(fields) >= 2 && fields[0] == "cargo" && fields[1] == "test":
		return parseCargoCheck(cmd, fields[2:])
	case len(fields) >= 2 && fields[0] == "node" && fields[1] == "--test":
		return parseNodeCheck(cmd)
	}
	return verify.ParseTestCommand(cmd)
}

var nodeCheckRE = regexp.MustCompile(`^node --test (\S+\.(?:js|mjs|cjs)) --test-name-pattern (?:'([^']+)'|"([^"]+)"|([^\s'"]+))$`)

func parseNodeCheck(cmd string) ([]verify.Test, error) {
	m := nodeCheckRE.FindStringSubmatch(strings.TrimSpace(cmd))
	if m == nil || !cleanRel(m[1]) {
		return nil, fmt.Errorf("%w: %q: write `node --test path/x.test.js --test-name-pattern 'NAME'`", verify.ErrTestCommand, cmd)
	}
	return []verify.Test{{Language: "javascript", Package: m[1], File: m[1], Name: m[2] + m[3] + m[4]}}, nil
}

func parseCargoCheck(cmd string, args []string) ([]verify.Test, error) {
	usage := fmt.Errorf("%w: %q: write `cargo test --lib NAME` or `cargo test --test TARGET NAME`", verify.ErrTestCommand, cmd)
	var root string
	switch {
	case len(args) == 2 && args[0] == "--lib":
		root, args = "src/lib.rs", args[1:]
	case len(args) == 3 && args[0] == "--test" && cleanRel(args[1]) && !strings.Contains(args[1], "/"):
		root, args = "tests/"+args[1]+".rs", args[2:]
	default:
		return nil, usage
	}
	if strings.HasPrefix(args[0], "-") {
		return nil, usage
	}
	return []verify.Test{{Language: "rust", Package: root, File: root, Name: args[0]}}, nil
}

// MatchPath reports whether the slash path p matches glob as a task's
// may_change and protected globs are read: path.Match, where a glob
// ending in "/**" also matches everything below that directory.
func MatchPath(glob, p string) bool {
	if dir, ok := strings.CutSuffix(glob, "/**"); ok && strings.HasPrefix(p, dir+"/") {
		return true
	}
	ok, err := path.Match(glob, p)
	return err == nil && ok
}

// Protects reports whether t's change must leave p alone.
func (t Task) Protects(p string) bool {
	for _, g := range t.Protected {
		if MatchPath(g, p) {
			return true
		}
	}
	return false
}
