package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bcode-dev/bcode/engine/app"
)

// stateFlags are the flags every subcommand that touches the ledger shares.
type stateFlags struct {
	repo   string
	state  string
	ledger string
}

func (s *stateFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.repo, "repo", ".", "the git checkout `DIR` to work on")
	fs.StringVar(&s.state, "state", "", "the state directory `DIR` holding the ledger (default $BCODE_STATE, else $XDG_STATE_HOME/bcode)")
	fs.StringVar(&s.ledger, "ledger", "", "the task ledger `URL`: postgres://user@host/db shared by a team's runners, or sqlite (default $BCODE_LEDGER, else ~/.config/bcode/ledger, else the SQLite file in the state directory)")
}

// use points the process's engine at the ledger these flags chose.
func (s *stateFlags) use(eng *app.Engine) error {
	choice, err := app.ResolveLedger(s.ledger)
	if err != nil {
		return err
	}
	p, err := s.ledgerPath()
	if err != nil {
		return err
	}
	return eng.UseLedger(p, choice)
}

// ledgerPath resolves where the ledger lives: --state wins over
// $BCODE_STATE, which wins over the XDG default.
func (s *stateFlags) ledgerPath() (string, error) {
	if s.state != "" {
		abs, err := filepath.Abs(s.state)
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return "", fmt.Errorf("state dir %s cannot be created: %w (pass another --state)", abs, err)
		}
		return filepath.Join(abs, "ledger.db"), nil
	}
	return app.DefaultLedgerPath()
}

// useLocal points the engine at the state directory's ledger file,
// whatever --ledger says: what it is used for (the sandbox images'
// records) belongs to this machine.
func (s *stateFlags) useLocal(eng *app.Engine) error {
	p, err := s.ledgerPath()
	if err != nil {
		return err
	}
	return eng.UseLedger(p, app.LedgerChoice{})
}
