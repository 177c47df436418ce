package shown

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer passes everything written to it on to its io.Writer in the form
// Text gives it: newlines, tabs and CRLF line endings kept, every other
// hidden rune and every byte that is not UTF-8 made visible, "##[" and
// "##vso[" broken. Unlike
// Text it leaves "::" at the start of a line alone: the program's own
// output may be workflow commands; text from elsewhere that may start a
// line goes through Text or Line first. A rune split across two writes is
// held until its rest arrives; Flush shows what is still held (a cut rune
// at the very end) as bytes.
//
// It is the choke point of a command's output: wrap stdout and stderr once,
// and no code path can forget to sanitise. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	held    [8]byte
	nheld   int
	scratch []byte
}

// NewWriter returns a Writer that shows what it is given on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write reports len(p) on success: what was held back for a later write
// counts as written.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := p
	if w.nheld > 0 {
		in = append(w.held[:w.nheld:w.nheld], p...)
		w.nheld = 0
	}
	cut := len(in) - max(heldTail(in), commandTail(in), crTail(in))
	out := neutraliseCommands(appendShown(w.scratch[:0], string(in[:cut]), true), false)
	w.nheld = copy(w.held[:], in[cut:])
	w.scratch = out[:0]
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := w.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// crTail holds a carriage return at the end of b: whether it ends a line
// (CRLF, kept) or overwrites one (escaped) depends on the next byte.
func crTail(b []byte) int {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return 1
	}
	return 0
}

// commandTail is how many bytes at the end of b may begin a "##[" or
// "##vso[" that the next write completes.
func commandTail(b []byte) int {
	for n := min(len(b), len("##vso")); n > 0; n-- {
		if tail := b[len(b)-n:]; hasPrefixFold([]byte("##vso["), string(tail)) || string(tail) == "##" {
			return n
		}
	}
	return 0
}

// heldTail is how many bytes at the end of b start a rune that the next
// write may complete.
func heldTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// Flush shows a rune still held from a cut write as bytes (\xe2\x80):
// the stream ended inside it.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nheld == 0 {
		return nil
	}
	out := appendShown(nil, string(w.held[:w.nheld]), true)
	w.nheld = 0
	_, err := w.w.Write(out)
	return err
}
