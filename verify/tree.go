package verify

import (
	"context"
	"io"
)

// Git modes a Tree lists.
const (
	ModeFile       = "100644"
	ModeExecutable = "100755"
	ModeSymlink    = "120000"
	ModeGitlink    = "160000"
)

// TreeEntry is one entry of a tree listed recursively: a file, a symbolic
// link (its blob is the target) or a gitlink (a submodule's commit).
type TreeEntry struct {
	Path string // slash-separated, relative to the top of the tree
	Mode string // ModeFile, ModeExecutable, ModeSymlink or ModeGitlink
	OID  string // the blob's id, or the submodule's commit for a gitlink
	Size int64  // the blob's size; -1 for a gitlink
}

// Tree is one tree as git stores it: what a checkout of it would write,
// read from the object database and never from a working tree. Landing
// (verify/tamper) judges a pair of them.
type Tree interface {
	// Entries lists every file, link and gitlink, recursively, in git's
	// order.
	Entries(ctx context.Context) ([]TreeEntry, error)
	// ReadBlobs calls fn once per id, in order, with a reader of exactly
	// that blob's content.
	ReadBlobs(ctx context.Context, oids []string, fn func(oid string, content io.Reader) error) error
}

// AttributeTree is a Tree that can also say which attributes git gives
// its paths when the tree is checked out (git check-attr over it). When a
// Tree is one, Landing asks it which changed files git would diff as
// binary because of an attribute.
type AttributeTree interface {
	Tree
	// Attributes returns, for each path, the value git gives each of
	// names: "set", "unset", "unspecified" or the value.
	Attributes(ctx context.Context, names []string, paths []string) (map[string]map[string]string, error)
}

// TreeSource is implemented by a Workspace that can hand out its sides as
// Trees; the gate's landing check judges them.
type TreeSource interface {
	Tree(side Side) Tree
}
