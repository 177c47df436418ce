package secrets

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	glconfig "github.com/zricethezav/gitleaks/v8/config"

	"github.com/bcode-dev/bcode/sandbox"
)

// CleanMemo redacts like a Scanner with gitleaks' default rules and no
// known values, but remembers in a file the texts that scanner found
// nothing in (by their SHA-256, never the text), so a process that only
// redacts texts scanned clean before (a warm `bcode pack` of the same
// code) never compiles the rules, which is most of a short process's
// time. A text not remembered is scanned, by a scanner built on first
// need; only a text found clean is remembered. The memo is keyed by the
// rules' text and by this executable (its path, size and time), so
// another build of bcode, whose scanner may find more, starts a memo of
// its own.
type CleanMemo struct {
	path  string
	build func() (*Scanner, error)

	mu      sync.Mutex
	clean   map[[cleanHashLen]byte]bool
	added   [][cleanHashLen]byte
	scanner *Scanner
	err     error
}

// cleanHashLen is how much of a text's SHA-256 the memo keeps.
const cleanHashLen = 16

// cleanMemoMax bounds the memo file: past it the memo starts again.
const cleanMemoMax = 64 << 20

// NewCleanMemo opens the memo kept in dir; build makes the scanner
// (gitleaks' default rules, no known values) when a text needs one.
func NewCleanMemo(dir string, build func() (*Scanner, error)) *CleanMemo {
	m := &CleanMemo{build: build, clean: map[[cleanHashLen]byte]bool{}}
	id, err := memoIdentity()
	if err != nil || dir == "" {
		return m // no file: every text is scanned
	}
	m.path = filepath.Join(dir, "clean-"+id)
	data, err := sandbox.ReadPath(m.path, cleanMemoMax)
	if err != nil {
		return m
	}
	for i := 0; i+cleanHashLen <= len(data); i += cleanHashLen {
		m.clean[[cleanHashLen]byte(data[i:i+cleanHashLen])] = true
	}
	return m
}

// memoIdentity names the rules and the scanner's code: the default
// rules' text and this executable's path, size and modification time.
func memoIdentity() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "clean memo v1\n%s\n%d\n%d\n%q\n", exe, fi.Size(), fi.ModTime().UnixNano(), exemptPathsDropped)
	h.Write([]byte(glconfig.DefaultConfig))
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// Redact implements what a pack's Redactor does. When the scanner cannot
// be built the text is withheld whole (counted as one secret) and Err
// says why.
func (m *CleanMemo) Redact(text string) (string, int) {
	sum := sha256.Sum256([]byte(text))
	key := [cleanHashLen]byte(sum[:cleanHashLen])
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.clean[key] {
		return text, 0
	}
	if m.scanner == nil && m.err == nil {
		m.scanner, m.err = m.build()
	}
	if m.err != nil {
		return "[withheld: the secret rules did not load]", 1
	}
	out, n := m.scanner.Redact(text)
	if n == 0 {
		m.clean[key] = true
		m.added = append(m.added, key)
	}
	return out, n
}

// Err is why the scanner could not be built, nil when it was not needed
// or was built.
func (m *CleanMemo) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Scanned reports whether any text needed the scanner.
func (m *CleanMemo) Scanned() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.scanner != nil || m.err != nil
}

// Save writes the memo back with the texts found clean since
// NewCleanMemo, best effort: a memo that cannot be written only makes the
// next process scan again. The file is replaced whole (a new file renamed
// over it), so a reader never sees half of it; of two processes saving at
// once one's additions are lost, which costs a scan.
func (m *CleanMemo) Save() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.path == "" || len(m.added) == 0 {
		return
	}
	dir := filepath.Dir(m.path)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	old, _ := sandbox.ReadPath(m.path, cleanMemoMax)
	if len(old)+len(m.added)*cleanHashLen > cleanMemoMax {
		old = nil // full: start again
	}
	buf := make([]byte, 0, len(old)+len(m.added)*cleanHashLen)
	buf = append(buf, old[:len(old)/cleanHashLen*cleanHashLen]...)
	for _, k := range m.added {
		buf = append(buf, k[:]...)
	}
	tmp, err := os.CreateTemp(dir, "clean-*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(buf)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), m.path) != nil {
		os.Remove(tmp.Name())
		return
	}
	m.added = nil
}
