// Package gitchange builds the verify.Change between two points of a git
// repository, through the hardened git of sandbox/git: the files that
// differ with both contents, their modes and changed lines, and a Workspace
// that lays out clean copies of either side outside the user's checkout.
package gitchange

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
)

// binarySniff is how much of a file is searched for a NUL byte, as git
// itself does to call a file binary.
const binarySniff = 8000

// Modes git records that are not plain files.
const (
	modeSymlink   = "120000"
	modeSubmodule = "160000"
)

// Load builds the change base..head. head == "" means the working tree as
// it is now (snapshotted to a tree; nothing of the user's is touched);
// base == "" means repo.DefaultBase.
//
// Every file that differs is listed, sorted by path: symbolic links with
// their target as content, submodules with mode 160000 and no content (the
// submodule's commit is not in this repository). Binary is set when either
// side has a NUL byte in its first 8000 bytes; Changed lists the head lines
// added or modified in text files.
func Load(ctx context.Context, repo *git.Repo, base, head string) (*verify.Change, error) {
	return LoadIn(ctx, repo, base, head, "")
}

// LoadIn is Load with the workspace's snapshots made in scratch (an
// existing directory; "" is the system's temporary directory): a sandbox
// whose commands can write below one directory only verifies there.
func LoadIn(ctx context.Context, repo *git.Repo, base, head, scratch string) (*verify.Change, error) {
	if repo == nil {
		return nil, errors.New("gitchange: no repository")
	}
	var baseID string
	var err error
	if base == "" {
		if baseID, err = repo.DefaultBase(ctx); err != nil {
			return nil, err
		}
	} else if baseID, err = repo.Resolve(ctx, base); err != nil {
		return nil, err
	}
	var headID string
	if head == "" {
		if headID, err = repo.SnapshotWorktree(ctx); err != nil {
			return nil, err
		}
	} else if headID, err = repo.Resolve(ctx, head); err != nil {
		return nil, err
	}

	entries, err := repo.DiffTree(ctx, baseID, headID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if hasContent(e.OldMode) {
			ids = append(ids, e.OldBlob)
		}
		if hasContent(e.NewMode) {
			ids = append(ids, e.NewBlob)
		}
	}
	blobs, err := repo.ReadBlobs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the changed files: %w", err)
	}

	files := make([]verify.FileChange, 0, len(entries))
	var textPaths []string
	for _, e := range entries {
		fc := verify.FileChange{Path: e.Path, BaseMode: e.OldMode, HeadMode: e.NewMode}
		switch e.Status {
		case 'A':
			fc.Status = verify.Added
		case 'D':
			fc.Status = verify.Deleted
		default: // 'M', and 'T' (a type change keeps its path)
			fc.Status = verify.Modified
		}
		if hasContent(e.OldMode) {
			fc.Base = blobs[e.OldBlob]
		}
		if hasContent(e.NewMode) {
			fc.Head = blobs[e.NewBlob]
		}
		fc.Binary = isBinary(fc.Base) || isBinary(fc.Head)
		if !fc.Binary && isRegular(e.NewMode) {
			textPaths = append(textPaths, e.Path)
		}
		files = append(files, fc)
	}
	if len(textPaths) > 0 {
		hunks, err := repo.DiffHunks(ctx, baseID, headID, textPaths)
		if err != nil {
			return nil, err
		}
		for i := range files {
			files[i].Changed = changedLines(hunks[files[i].Path])
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	ws := &Workspace{repo: repo, base: baseID, head: headID, scratch: scratch}
	if scratch == "" {
		ws.stable = stableKey(ctx, repo)
	}
	return &verify.Change{
		Base:      baseID,
		Head:      headID,
		Files:     files,
		Workspace: ws,
	}, nil
}

// stableKey names the repository's stable snapshot directories: a hash of
// its common git directory, so every linked working tree of it (each
// task's attempts) shares them. "" when git cannot tell it: every
// snapshot is then a fresh directory.
func stableKey(ctx context.Context, repo *git.Repo) string {
	common, err := repo.CommonDir(ctx)
	if err != nil || common == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(common))
	return hex.EncodeToString(sum[:12])
}

// hasContent reports whether a side with this mode has a blob to read:
// a file or a link, not an absent side or a submodule.
func hasContent(mode string) bool { return mode != "" && mode != modeSubmodule }

func isRegular(mode string) bool { return mode != "" && mode != modeSymlink && mode != modeSubmodule }

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0
}

// changedLines turns zero-context hunks into head line ranges; a hunk that
// only removes lines changes none.
func changedLines(hunks []git.Hunk) []verify.LineRange {
	var out []verify.LineRange
	for _, h := range hunks {
		if h.NewLines == 0 {
			continue
		}
		out = append(out, verify.LineRange{Start: h.NewStart, End: h.NewStart + h.NewLines - 1})
	}
	return out
}
