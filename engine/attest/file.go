package attest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Size limits of what Verify reads.
const (
	// MaxEnvelope bounds an attestation file.
	MaxEnvelope = 16 << 20
	// MaxDiff bounds a diff file.
	MaxDiff = 1 << 30
)

// ReadInput reads a regular file of at most max bytes: a fifo or a
// device (which could block or never end) and a file over the limit are
// refused with ErrInput, before anything is read from them.
func ReadInput(path string, max int64) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrInput, path)
		}
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrInput, path)
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%w: %s is %d bytes, over the %d-byte limit", ErrInput, path, info.Size(), max)
	}
	return readCapped(path, max)
}

// readCapped reads at most max bytes of path; more is ErrInput.
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", ErrInput, path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %s is over the %d-byte limit", ErrInput, path, max)
	}
	return data, nil
}

// WriteFile replaces path with data atomically: the bytes go to a
// temporary file beside it, synced, which is then renamed over it. A
// reader sees the old file or the new one, never a part; a failure leaves
// the old file as it was. A directory at path is refused.
func WriteFile(path string, data []byte) error {
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return fmt.Errorf("%w: %s exists and is not a regular file", ErrInput, path)
	}
	tmp, err := writeTemp(path, data, 0o644)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("attest: writing %s: %w", path, err)
	}
	return nil
}

// writeTemp writes data, synced, to a new file with mode perm beside path
// and returns its name.
func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("attest: writing %s: %w", path, err)
	}
	name := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("attest: writing %s: %w", path, err)
	}
	return name, nil
}
