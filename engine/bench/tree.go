package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/verify"
)

// WriteFiles writes files below dir, making directories as needed; a
// file whose content is Deleted is removed instead.
func WriteFiles(dir string, files []txtar.File) error {
	for _, f := range files {
		if !cleanRel(f.Name) {
			return fmt.Errorf("%w: %q is not a path inside the repository", ErrFixture, f.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if IsDeleted(f) {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteHidden writes a task's hidden files over a snapshot in dir. A
// source file that holds its own tests (a Rust file outside tests/, which
// splicer says by splicing it) keeps the snapshot's code and takes only
// the hidden version's test modules, so the hidden file never carries a
// fix into grading; every other hidden file is written whole. splicer may
// be nil when no task file needs it.
func WriteHidden(dir string, hidden []txtar.File, splicer verify.TestSplicer) error {
	out := make([]txtar.File, 0, len(hidden))
	for _, h := range hidden {
		out = append(out, h)
		if splicer == nil || strings.HasPrefix(h.Name, "tests/") || !strings.HasSuffix(h.Name, ".rs") {
			continue
		}
		code, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(h.Name)))
		if os.IsNotExist(err) {
			continue // the agent deleted it: the hidden file stands alone
		}
		if err != nil {
			return err
		}
		spliced, ok := splicer.SpliceTests(h.Name, code, h.Data)
		if !ok {
			return fmt.Errorf("%w: hidden/%s: the test modules of it or of the snapshot's file cannot be read", ErrFixture, h.Name)
		}
		out[len(out)-1].Data = spliced
	}
	return WriteFiles(dir, out)
}
