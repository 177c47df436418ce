package gitchange

import (
	"context"
	"io"

	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// Tree is a verify.Tree over one commit or tree of a repository, read
// through the hardened git of sandbox/git: ls-tree, cat-file and
// check-attr over a private index, never a working tree.
type Tree struct {
	Repo *git.Repo
	Rev  string // a commit or tree id
}

var _ verify.AttributeTree = Tree{}

// NewTree is the tree rev names in repo.
func NewTree(repo *git.Repo, rev string) Tree { return Tree{Repo: repo, Rev: rev} }

// Entries lists the tree recursively with the blobs' sizes.
func (t Tree) Entries(ctx context.Context) ([]verify.TreeEntry, error) {
	files, err := t.Repo.ListTree(ctx, t.Rev)
	if err != nil {
		return nil, err
	}
	out := make([]verify.TreeEntry, len(files))
	for i, f := range files {
		out[i] = verify.TreeEntry{Path: f.Path, Mode: f.Mode, OID: f.OID, Size: f.Size}
	}
	return out, nil
}

// ReadBlobs streams the blobs through one cat-file process.
func (t Tree) ReadBlobs(ctx context.Context, oids []string, fn func(oid string, content io.Reader) error) error {
	return t.Repo.StreamBlobs(ctx, oids, fn)
}

// Attributes asks git check-attr, with the tree as the index.
func (t Tree) Attributes(ctx context.Context, names, paths []string) (map[string]map[string]string, error) {
	return t.Repo.CheckAttr(ctx, t.Rev, names, paths)
}

// Tree returns side's tree, for the gate's landing check.
func (w *Workspace) Tree(side verify.Side) verify.Tree {
	if side == verify.BaseSide {
		return NewTree(w.repo, w.base)
	}
	return NewTree(w.repo, w.head)
}

var _ verify.TreeSource = (*Workspace)(nil)
