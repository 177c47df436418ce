package mutate

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
)

// Caps of what an engine copies or embeds.
const (
	// MaxCopiedFile caps a file of the snapshot copied for a worker.
	MaxCopiedFile = 256 << 20
	// MaxTestSource caps a test file a report embeds.
	MaxTestSource = 1 << 20
)

// Record adds the mutants of one changed source to the session's report,
// with the source and the test files their covering tests and killers
// live in (testFile names the file of a test as the engine names tests),
// for the reports that show them. Engines that write each mutant as text
// into a copy (JavaScript, Rust) record this way.
func (s *Session) Record(rel string, src []byte, mutants []*Mutant, testFile func(name string) string) {
	rep := s.Report
	for _, m := range mutants {
		rep.Mutants = append(rep.Mutants, *m)
		for _, n := range append(append([]string(nil), m.Tests...), m.KilledBy) {
			if n == "" {
				continue
			}
			tf := testFile(n)
			rep.TestFiles[path.Dir(m.File)+":"+n] = tf
			if _, ok := rep.Sources[tf]; !ok {
				if b, err := ReadBeneath(s.Root, filepath.Join(s.Root, filepath.FromSlash(tf)), MaxTestSource); err == nil {
					rep.Sources[tf] = string(b)
				}
			}
		}
	}
	rep.Sources[rel] = string(src)
}

// CopyTree copies the snapshot at root to dst for a worker that writes
// mutants into it: every file copied (a link would lead a runner to the
// unmutated source), .git left out, and each directory keep names
// (installed packages, build output) linked to the snapshot's (link) or
// left out (skip).
func CopyTree(root, dst string, keep func(name string) (link, skip bool)) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return WalkBeneath(root, root, func(p string, d fs.DirEntry) error {
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			link, skip := keep(d.Name())
			switch {
			case d.Name() == ".git" || skip:
				return fs.SkipDir
			case link:
				if err := os.Symlink(p, to); err != nil {
					return err
				}
				return fs.SkipDir
			}
			return os.MkdirAll(to, 0o755)
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			data, err := ReadBeneath(root, p, MaxCopiedFile)
			if err != nil {
				return nil // refused or unreadable: the tests do without it
			}
			return os.WriteFile(to, data, 0o644)
		}
		return nil
	})
}

// IDs gives the mutants of one run their IDs, the same recipe for every
// engine: a hash of what the mutant is (file, function, operator, original
// and mutated text) and its occurrence among identical ones in source
// order, never its line, so an edit elsewhere in the file keeps every ID.
type IDs map[string]int

// Assign sets m.ID and returns m's occurrence index (0, 1, 2...). Call it
// on a file's mutants in source order.
func (ids IDs) Assign(m *Mutant) int {
	k := m.File + "\x00" + m.Func + "\x00" + m.Operator + "\x00" + m.Original + "\x00" + m.Mutated
	occur := ids[k]
	ids[k]++
	sum := sha256.Sum256([]byte(k + "\x00" + strconv.Itoa(occur)))
	m.ID = hex.EncodeToString(sum[:8])
	return occur
}
