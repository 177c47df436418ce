package tamper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// Git's limits for calling content binary.
const (
	// gitSniff: git looks for a NUL in this many first bytes (xdiff-interface.c,
	// buffer_is_binary).
	gitSniff = 8000
	// bigFileThreshold: git's core.bigFileThreshold default; git diff calls
	// a larger file binary without reading it.
	bigFileThreshold = 512 << 20
)

// binaryScan watches a file's bytes go by for what makes it binary to git
// or hides bytes from a text diff.
type binaryScan struct {
	n     int64
	nulAt int64 // -1 until a NUL is seen
	start []byte
}

func newBinaryScan() *binaryScan { return &binaryScan{nulAt: -1} }

func (s *binaryScan) Write(p []byte) (int, error) {
	if len(s.start) < 4 {
		s.start = append(s.start, p[:min(len(p), 4-len(s.start))]...)
	}
	if s.nulAt < 0 {
		if i := bytes.IndexByte(p, 0); i >= 0 {
			s.nulAt = s.n + int64(i)
		}
	}
	s.n += int64(len(p))
	return len(p), nil
}

// why says what makes the content binary, or "".
func (s *binaryScan) why() string {
	var r []string
	switch {
	case bytes.HasPrefix(s.start, []byte{0xff, 0xfe, 0, 0}), bytes.HasPrefix(s.start, []byte{0, 0, 0xfe, 0xff}):
		r = append(r, "a UTF-32 byte-order mark: git diffs it as bytes, and the text it holds is not what the diff shows")
	case bytes.HasPrefix(s.start, []byte{0xff, 0xfe}), bytes.HasPrefix(s.start, []byte{0xfe, 0xff}):
		r = append(r, "a UTF-16 byte-order mark: git diffs it as bytes, and the text it holds is not what the diff shows")
	}
	switch {
	case s.nulAt >= 0 && s.nulAt < gitSniff:
		r = append(r, fmt.Sprintf("a NUL byte at offset %d (git's rule: a NUL in the first %d bytes; git diff prints \"Binary files differ\")", s.nulAt, gitSniff))
	case s.nulAt >= 0:
		r = append(r, fmt.Sprintf("a NUL byte at offset %d, past the %d bytes git looks at: git diffs it as text with raw NULs that terminals and tools drop", s.nulAt, gitSniff))
	}
	return strings.Join(r, "; ")
}

// WhyBinary says what makes content binary to git, or hides bytes from a
// text diff of it (a NUL anywhere, a UTF-16 or UTF-32 byte-order mark);
// "" for text. bcode task diff shows such files in a safe form instead.
func WhyBinary(content []byte) string {
	s := newBinaryScan()
	s.Write(content)
	if int64(len(content)) > bigFileThreshold {
		return "larger than git's core.bigFileThreshold (512 MiB): git diff calls it binary without reading it"
	}
	return s.why()
}

// binaryFiles reports each changed file of the landed tree that git would
// call binary: by its bytes (read as a stream), its size, or an attribute
// of the landed tree that unsets diff (-diff, binary), when the tree can
// say (verify.AttributeTree).
func binaryFiles(ctx context.Context, t verify.Tree, ix *treeIndex, changed []verify.TreeEntry) ([]verify.Finding, error) {
	why := map[string][]string{}
	var read []string
	byOID := map[string][]string{}
	for _, e := range changed {
		if e.Size > bigFileThreshold {
			why[e.Path] = append(why[e.Path], "larger than git's core.bigFileThreshold (512 MiB): git diff calls it binary without reading it")
			continue
		}
		if byOID[e.OID] == nil {
			read = append(read, e.OID)
		}
		byOID[e.OID] = append(byOID[e.OID], e.Path)
	}
	err := t.ReadBlobs(ctx, read, func(oid string, r io.Reader) error {
		s := newBinaryScan()
		if _, err := io.Copy(s, r); err != nil {
			return err
		}
		if w := s.why(); w != "" {
			for _, p := range byOID[oid] {
				why[p] = append(why[p], w)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the landed files: %w", err)
	}
	if at, ok := t.(verify.AttributeTree); ok && len(changed) > 0 && len(ix.attrs) > 0 {
		paths := make([]string, len(changed))
		for i, e := range changed {
			paths[i] = e.Path
		}
		attrs, err := at.Attributes(ctx, []string{"diff"}, paths)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			if attrs[p]["diff"] == "unset" {
				why[p] = append(why[p], "the landed tree's .gitattributes unset diff for it (-diff or binary): git diff prints \"Binary files differ\"")
			}
		}
	}
	var out []verify.Finding
	for _, e := range changed {
		if w := why[e.Path]; len(w) > 0 {
			out = append(out, verify.Finding{Code: FindingBinary, Path: e.Path,
				Message: fmt.Sprintf("binary to git, %d bytes: %s; bcode task diff shows its content escaped or as a hex dump", e.Size, strings.Join(w, "; "))})
		}
	}
	return out, nil
}
