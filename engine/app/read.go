package app

import (
	"errors"
	"fmt"

	"github.com/bcode-dev/bcode/sandbox"
)

// TooLargeError is ReadConfined's refusal of a file over its cap.
type TooLargeError struct {
	Path string
	// Size is the file's size before a byte was read; with Grew, it was
	// within the cap then and grew past it while it was read.
	Size int64
	Max  int64
	Grew bool
}

func (e *TooLargeError) Error() string {
	if e.Grew {
		return fmt.Sprintf("%s grew past %d bytes while it was read", e.Path, e.Max)
	}
	return fmt.Sprintf("%s is %d bytes, over %d", e.Path, e.Size, e.Max)
}

// ReadConfined reads the regular file rel (slash-separated) beneath the
// directory root the way bcode reads a tree it does not trust (an editor's
// workspace may be an agent's): no symbolic link is followed out of root,
// nor a final one at all, and a file over max bytes is refused, with a
// *TooLargeError, before any byte of it is read, or as soon as it grows
// past max.
func ReadConfined(root, rel string, max int64) ([]byte, error) {
	conf, err := sandbox.OpenConfined(root)
	if err != nil {
		return nil, err
	}
	defer conf.Close()
	fi, err := conf.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, &TooLargeError{Path: rel, Size: fi.Size(), Max: max}
	}
	b, err := conf.ReadFile(rel, max)
	if errors.Is(err, sandbox.ErrTooLarge) {
		return nil, &TooLargeError{Path: rel, Size: fi.Size(), Max: max, Grew: true}
	}
	return b, err
}
