package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// DigestPrefix names the hash of a Digest.
const DigestPrefix = "sha256:"

// canonicalDiffArgs fix every choice git would otherwise take from the
// repository's configuration or the user's: the format of a canonical
// diff depends on the two trees alone.
var canonicalDiffArgs = []string{
	"-c", "core.quotePath=true",
	"-c", "diff.suppressBlankEmpty=false",
	"-c", "core.attributesFile=/dev/null",
	"diff-tree", "-r", "-p",
	"--binary", "--full-index", "--no-renames", "--no-color",
	"--no-ext-diff", "--no-textconv", "--no-relative",
	"--ignore-submodules=none", "--submodule=short",
	"-U3", "--inter-hunk-context=0", "--diff-algorithm=myers", "--indent-heuristic",
	"--src-prefix=a/", "--dst-prefix=b/", "-O/dev/null",
}

// CanonicalDiff is the change from base to head as one patch that `git
// apply` takes: every path in git's order, full object ids, binary files
// as git binary patches, no colour, no renames, and no external or
// textconv driver. Its bytes depend on the two commits alone: git reads no
// .gitattributes (it runs against an empty work tree and index, so a
// change cannot mark its own files binary or text), no configuration of
// the user's and no diff setting of the repository's. The same commits
// give the same bytes on any machine with this git, which is what a
// Digest of it names.
func (r *Repo) CanonicalDiff(ctx context.Context, base, head string) ([]byte, error) {
	for _, rev := range []string{base, head} {
		if err := checkRev(rev); err != nil {
			return nil, err
		}
	}
	b, err := r.Resolve(ctx, base)
	if err != nil {
		return nil, err
	}
	h, err := r.Resolve(ctx, head)
	if err != nil {
		return nil, err
	}
	empty, err := scratch.MkdirTemp("bcode-canonical-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(empty)
	env := []string{"GIT_DIR=" + r.GitDir, "GIT_WORK_TREE=" + empty, "GIT_INDEX_FILE=" + filepath.Join(empty, "no-index")}
	args := append(append([]string(nil), canonicalDiffArgs...), b, h)
	out, err := run(ctx, invocation{dir: empty, args: args, env: append(append([]string(nil), r.env...), env...), drivers: r.drivers})
	if err != nil {
		return nil, fmt.Errorf("canonical diff %s..%s: %w", short(b), short(h), err)
	}
	return out, nil
}

// Digest names a canonical diff by its SHA-256: "sha256:" and 64 hex
// digits.
func Digest(diff []byte) string {
	sum := sha256.Sum256(diff)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// ValidDigest reports whether d is a Digest as Digest writes it:
// "sha256:" and 64 lower-case hex digits. Every reader of a digest a user
// or a file gives checks it here.
func ValidDigest(d string) bool {
	h, ok := strings.CutPrefix(d, DigestPrefix)
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
