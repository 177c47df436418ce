package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StateDir is where bcode keeps its state, created 0700 if missing:
// $BCODE_STATE, else $XDG_STATE_HOME/bcode, else ~/.local/state/bcode.
// A relative XDG_STATE_HOME is ignored, as the XDG spec says; a relative
// BCODE_STATE is taken from the working directory.
func StateDir() (string, error) {
	var dir string
	switch {
	case os.Getenv("BCODE_STATE") != "":
		abs, err := filepath.Abs(os.Getenv("BCODE_STATE"))
		if err != nil {
			return "", fmt.Errorf("BCODE_STATE %q: %w", os.Getenv("BCODE_STATE"), err)
		}
		dir = abs
	case filepath.IsAbs(os.Getenv("XDG_STATE_HOME")):
		dir = filepath.Join(os.Getenv("XDG_STATE_HOME"), "bcode")
	default:
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return "", errors.New("cannot find the state dir: neither BCODE_STATE, XDG_STATE_HOME nor HOME is set (set BCODE_STATE or --state)")
		}
		dir = filepath.Join(home, ".local", "state", "bcode")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state dir %s is not writable: %w (set BCODE_STATE or --state)", dir, err)
	}
	return dir, nil
}

// DefaultPath is the ledger file in StateDir.
func DefaultPath() (string, error) {
	dir, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "ledger.db"), nil
}
