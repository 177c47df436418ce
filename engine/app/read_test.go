package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/engine/app"
)

// TestReadConfined: a file within the cap is read; one over it is refused
// with its size before it is read; a symbolic link is never followed.
func TestReadConfined(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "small.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "big.txt"), make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("small.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if b, err := app.ReadConfined(root, "small.txt", 10); err != nil || string(b) != "hello" {
		t.Errorf("small.txt: %q, %v; want hello", b, err)
	}
	var big *app.TooLargeError
	if _, err := app.ReadConfined(root, "big.txt", 10); !errors.As(err, &big) || big.Size != 100 || big.Grew {
		t.Errorf("big.txt: %v, want a TooLargeError of 100 bytes found before reading", err)
	}
	if b, err := app.ReadConfined(root, "link.txt", 10); err == nil {
		t.Errorf("link.txt was read (%q): a symbolic link must not be followed", b)
	}
}
