package mutate

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
