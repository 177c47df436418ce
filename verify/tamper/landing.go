package tamper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// Finding codes for what landing a tree would put in a checkout that git,
// the kernel or the user's next command acts on in a way the reviewed diff
// does not show.
const (
	// FindingSymlinkOutside: a symbolic link that, resolved the way the
	// kernel resolves it, leaves the tree (an absolute target, or ".."
	// past the top, through any chain of links) or reaches into .git:
	// after landing, a read or write through it touches a host file.
	FindingSymlinkOutside = "symlink_outside"
	// FindingSymlinkDangling: a symbolic link whose target does not exist
	// in the landed tree (or runs through a file, or into a submodule
	// whose content the tree does not hold): whatever later appears there
	// on the host is what it reaches.
	FindingSymlinkDangling = "symlink_dangling"
	// FindingSymlinkLoop: more than 40 links on the way (the kernel's
	// limit, ELOOP).
	FindingSymlinkLoop = "symlink_loop"
	// FindingAttributesDriver: a .gitattributes line that routes files to
	// a filter, diff or merge driver: the user's git runs whatever program
	// a configuration names for it.
	FindingAttributesDriver = "gitattributes_driver"
	// FindingAttributesContent: a .gitattributes line that changes the
	// bytes git writes (text, eol, crlf, working-tree-encoding, ident,
	// export-subst, merge=union): the checkout differs from the diff.
	FindingAttributesContent = "gitattributes_content"
	// FindingAttributesBinary: a .gitattributes line that makes git diff
	// files as binary (-diff, binary): their content is hidden from review.
	FindingAttributesBinary = "gitattributes_binary"
	// FindingBinary: a file git would call binary, or that carries bytes a
	// text diff does not show (a late NUL, a UTF-16/32 byte-order mark).
	FindingBinary = "binary_file"
	// FindingPathCollision: two paths that are one file on a case- or
	// normalization-insensitive file system (macOS, Windows): one
	// overwrites the other on checkout.
	FindingPathCollision = "path_collision"
	// FindingInvalidPath: a path git refuses or that names git's own
	// directory on some file system (.git in any spelling, "..").
	FindingInvalidPath = "invalid_path"
	// FindingGitmodules: a .gitmodules added or changed; `update = !cmd`
	// runs cmd on the next `git submodule update`, and an invalid entry
	// makes git fail in the checkout.
	FindingGitmodules = "gitmodules"
	// FindingLFSConfig: a .lfsconfig added or changed at the top: git-lfs
	// takes its endpoint from it.
	FindingLFSConfig = "lfsconfig"
	// FindingNestedRepo: a gitlink (new, or moved to another commit), or
	// the files of a bare repository: git would read them as a repository,
	// with its own configuration.
	FindingNestedRepo = "nested_repository"
)

// ErrNoTree: Landing was given no tree to judge.
var ErrNoTree = errors.New("tamper: no tree to judge")

// Landing reports what landing after on a checkout of before would put
// there that git or the kernel acts on: links resolved component by
// component as the kernel resolves them, .gitattributes read line by line
// as git reads them, files git calls binary, colliding paths, gitlinks,
// .gitmodules and bare repositories. before is what the user's branch
// holds now (nil for nothing): a finding it already has is the user's own
// and is not reported again. Every byte is read from the trees, never from
// a working tree.
func Landing(ctx context.Context, before, after verify.Tree) ([]verify.Finding, error) {
	if after == nil {
		return nil, ErrNoTree
	}
	a, err := loadTree(ctx, after)
	if err != nil {
		return nil, fmt.Errorf("reading the landed tree: %w", err)
	}
	b := &treeIndex{entries: map[string]verify.TreeEntry{}, dirs: map[string]bool{"": true}, heads: map[string]string{}}
	if before != nil {
		if b, err = loadTree(ctx, before); err != nil {
			return nil, fmt.Errorf("reading the tree before landing: %w", err)
		}
	}
	old := map[string]bool{}
	for _, f := range b.judge() {
		old[f.key] = true
	}
	var out []verify.Finding
	for _, f := range a.judge() {
		if !old[f.key] {
			out = append(out, f.Finding)
		}
	}
	changed := changedFiles(a, b)
	bin, err := binaryFiles(ctx, after, a, changed)
	if err != nil {
		return nil, err
	}
	out = append(out, bin...)
	slices.SortFunc(out, func(x, y verify.Finding) int {
		return cmp.Or(cmp.Compare(x.Path, y.Path), cmp.Compare(x.Line, y.Line), cmp.Compare(x.Code, y.Code), cmp.Compare(x.Message, y.Message))
	})
	return slices.CompactFunc(out, func(x, y verify.Finding) bool { return x == y }), nil
}

// keyed is a finding with what makes it the same finding on both trees:
// its code, path and message without line numbers (a line moved by an
// edit above it is not new).
type keyed struct {
	verify.Finding
	key string
}

func finding(code, p string, line int, msg string) keyed {
	return keyed{Finding: verify.Finding{Code: code, Path: p, Line: line, Message: msg}, key: code + "\x00" + p + "\x00" + msg}
}

// maxSmallBlob bounds the link targets, .gitattributes and .gitmodules
// read whole; larger ones are read as a stream (attributes) or judged by
// their size (a link target over PATH_MAX does not resolve).
const maxSmallBlob = 1 << 20

// treeIndex is one tree loaded for judging: its entries, every directory
// they imply, and the content of the few blobs git itself interprets.
type treeIndex struct {
	entries map[string]verify.TreeEntry
	order   []string        // entry paths in git's order
	dirs    map[string]bool // every parent directory, "" the top
	targets map[string]string
	attrs   map[string][]attrLine // .gitattributes path -> its lines
	modules map[string]string     // .gitmodules path -> its content
	heads   map[string]string     // blob id -> content, of small files named HEAD
}

func loadTree(ctx context.Context, t verify.Tree) (*treeIndex, error) {
	entries, err := t.Entries(ctx)
	if err != nil {
		return nil, err
	}
	ix := &treeIndex{entries: make(map[string]verify.TreeEntry, len(entries)), dirs: map[string]bool{"": true},
		targets: map[string]string{}, attrs: map[string][]attrLine{}, modules: map[string]string{}, heads: map[string]string{}}
	byOID := map[string][]verify.TreeEntry{}
	var read []string
	for _, e := range entries {
		ix.entries[e.Path] = e
		ix.order = append(ix.order, e.Path)
		for d := path.Dir(e.Path); d != "." && !ix.dirs[d]; d = path.Dir(d) {
			ix.dirs[d] = true
		}
		base := path.Base(e.Path)
		if e.Mode == verify.ModeSymlink || (e.Mode != verify.ModeGitlink && (isAttributesFile(base) || isModulesFile(base) || (base == "HEAD" && e.Size <= 100))) {
			if byOID[e.OID] == nil {
				read = append(read, e.OID)
			}
			byOID[e.OID] = append(byOID[e.OID], e)
		}
	}
	err = t.ReadBlobs(ctx, read, func(oid string, r io.Reader) error {
		// The first maxSmallBlob bytes serve links and .gitmodules; an
		// attributes file is parsed as a stream, however long.
		head := &cappedBuffer{limit: maxSmallBlob}
		tr := io.TeeReader(r, head)
		var lines []attrLine
		var err error
		for _, e := range byOID[oid] {
			if e.Mode != verify.ModeSymlink && isAttributesFile(path.Base(e.Path)) {
				lines, err = parseAttributes(tr)
				if err != nil {
					return err
				}
				break
			}
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return err
		}
		for _, e := range byOID[oid] {
			switch base := path.Base(e.Path); {
			case e.Mode == verify.ModeSymlink:
				ix.targets[e.Path] = head.String()
				if isAttributesFile(base) {
					// git reads attributes from the index without
					// looking at the mode: a link's target is its lines.
					if ix.attrs[e.Path], err = parseAttributes(strings.NewReader(head.String())); err != nil {
						return err
					}
				}
			case isAttributesFile(base):
				ix.attrs[e.Path] = lines
			case isModulesFile(base):
				ix.modules[e.Path] = head.String()
			case base == "HEAD":
				ix.heads[oid] = head.String()
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// cappedBuffer keeps the first limit bytes written to it and drops the rest.
type cappedBuffer struct {
	strings.Builder
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		b.Builder.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// judge is every finding of the tree on its own.
func (ix *treeIndex) judge() []keyed {
	var out []keyed
	out = append(out, ix.judgeLinks()...)
	out = append(out, ix.judgeAttributes()...)
	out = append(out, ix.judgePaths()...)
	return out
}

// changedFiles are the regular files of a that b does not hold with the
// same content and mode.
func changedFiles(a, b *treeIndex) []verify.TreeEntry {
	var out []verify.TreeEntry
	for _, p := range a.order {
		e := a.entries[p]
		if e.Mode == verify.ModeSymlink || e.Mode == verify.ModeGitlink {
			continue
		}
		if old, ok := b.entries[p]; ok && old.OID == e.OID && old.Mode == e.Mode {
			continue
		}
		out = append(out, e)
	}
	return out
}

// clip shortens what a finding quotes from the tree.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf("… (%d bytes)", len(s))
}
