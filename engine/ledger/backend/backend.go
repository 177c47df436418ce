// Package backend opens the ledger the user chose: a PostgreSQL database
// several runners share, or the embedded SQLite file in the state
// directory (the default). The choice is the user's alone: --ledger, else
// $BCODE_LEDGER, else the first line of the user's own
// $XDG_CONFIG_HOME/bcode/ledger (~/.config/bcode/ledger). A repository's
// .bcode/config.toml never chooses it: a checkout must not be able to send
// bcode's records, leases and task goals to a database of its choosing.
package backend

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
)

// Env names the ledger when no --ledger flag does.
const Env = "BCODE_LEDGER"

// Choice is where the ledger is and who chose it.
type Choice struct {
	// URL is a postgres:// URL, or "" for the SQLite file in the state dir.
	URL string
	// From says where URL came from: "--ledger", "$BCODE_LEDGER", the
	// config file's path, or "default".
	From string
}

// IsShared reports whether the choice is a database other machines may share.
func (c Choice) IsShared() bool { return c.URL != "" }

// String describes the choice without any password.
func (c Choice) String() string {
	if c.URL == "" {
		return "the SQLite ledger in the state directory"
	}
	return postgres.Redact(c.URL) + " (from " + c.From + ")"
}

// ConfigFile is the user's file naming the ledger: $XDG_CONFIG_HOME/bcode/ledger,
// else ~/.config/bcode/ledger; "" when neither can be found.
func ConfigFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "bcode", "ledger")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "bcode", "ledger")
}

// Resolve picks the ledger: flag, else $BCODE_LEDGER, else the config
// file's first non-comment line, else the default SQLite file.
func Resolve(flag string) (Choice, error) {
	var c Choice
	switch {
	case flag != "":
		c = Choice{URL: flag, From: "--ledger"}
	case os.Getenv(Env) != "":
		c = Choice{URL: os.Getenv(Env), From: "$" + Env}
	default:
		f := ConfigFile()
		line, err := firstLine(f)
		if err != nil {
			return Choice{}, fmt.Errorf("reading %s: %w", f, err)
		}
		if line == "" {
			return Choice{From: "default"}, nil
		}
		c = Choice{URL: line, From: f}
	}
	if c.URL == "sqlite" {
		return Choice{From: c.From}, nil
	}
	if !postgres.IsURL(c.URL) {
		return Choice{}, fmt.Errorf("ledger %q (from %s) is not a postgres:// URL: give postgres://user@host/db, or \"sqlite\" for the file in the state directory", postgres.Redact(c.URL), c.From)
	}
	return c, nil
}

func firstLine(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			return l, nil
		}
	}
	return "", sc.Err()
}

// Open opens the chosen ledger; sqlitePath is the SQLite file to use when
// the choice is the default, opened with sqliteOpts (its own tables, such
// as the code index's).
func Open(ctx context.Context, c Choice, sqlitePath string, sqliteOpts ...ledger.Option) (ledger.Store, error) {
	if c.IsShared() {
		return postgres.Open(ctx, c.URL)
	}
	return ledger.Open(ctx, sqlitePath, sqliteOpts...)
}
