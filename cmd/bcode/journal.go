package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bcode-dev/bcode/engine/app"
)

func init() {
	register(command{
		name:    "journal",
		summary: "the ledger's hash-chained claim journal: verify it, export it for archiving",
		run:     cmdJournal,
	})
}

// journalGroup is bcode journal.
var journalGroup = commandGroup{
	name: "bcode journal",
	about: `  verify [--in FILE]   recompute the chain; name the first entry changed, removed or reordered
  export [--out FILE]  write the journal as JSON lines, for archiving (default: standard output)

Every verdict, export, approval, acceptance and rejection bcode records appends one entry.
Both take --state DIR and --ledger URL (see bcode task -h).`,
	subs: map[string]subcommand{"verify": journalVerify, "export": journalExport},
}

func cmdJournal(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	return journalGroup.run(ctx, eng, args, stdout, stderr)
}

// journalFlags are a journal subcommand's flags: where the ledger is.
func journalFlags(usage string, stdout, stderr io.Writer) (*cliFlags, *stateFlags) {
	fs := newFlags("bcode journal "+usage, stdout, stderr)
	st := &stateFlags{}
	fs.StringVar(&st.state, "state", "", "the state directory `DIR` holding the ledger (default $BCODE_STATE, else $XDG_STATE_HOME/bcode)")
	fs.StringVar(&st.ledger, "ledger", "", "the task ledger `URL` (default $BCODE_LEDGER, else ~/.config/bcode/ledger, else the SQLite file in the state directory)")
	return fs, st
}

func journalVerify(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs, st := journalFlags("verify [--in FILE]", stdout, stderr)
	fs.about = "Exit 0 when every entry checks, 1 naming the first that does not (or a file that is not an export), 2 on a usage error."
	in := fs.String("in", "", "verify an exported journal `FILE` (bcode journal export) instead of the ledger's")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	var (
		res app.JournalCheck
		err error
	)
	if *in != "" {
		f, ferr := os.Open(*in)
		if ferr != nil {
			errorf(stderr, fs.Name(), "%v", ferr)
			return 1
		}
		defer f.Close()
		res, err = app.VerifyJournalExport(f)
	} else {
		if err := st.use(eng); err != nil {
			errorf(stderr, fs.Name(), "%v", err)
			return 1
		}
		res, err = eng.JournalVerify(ctx)
	}
	if err != nil {
		errorf(stderr, fs.Name(), "%v", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s, chain intact", entries(res.Entries))
	if res.Head != "" {
		fmt.Fprintf(stdout, " (head %s)", res.Head)
	}
	fmt.Fprintln(stdout)
	return 0
}

func journalExport(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs, st := journalFlags("export [--out FILE]", stdout, stderr)
	out := fs.String("out", "", "write to `FILE` (replaced whole, only once every entry is written) instead of standard output")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	if err := st.use(eng); err != nil {
		errorf(stderr, fs.Name(), "%v", err)
		return 1
	}
	if *out == "" {
		if _, err := eng.JournalExport(ctx, stdout); err != nil {
			errorf(stderr, fs.Name(), "%v", err)
			return 1
		}
		return 0
	}
	n, err := exportTo(ctx, eng, *out)
	if err != nil {
		errorf(stderr, fs.Name(), "%v", err)
		return 1
	}
	fmt.Fprintf(stderr, "%s written to %s\n", entries(n), *out)
	return 0
}

// exportTo writes the journal to a temporary file beside path and renames
// it over path once it is whole: a failed export leaves path as it was.
func exportTo(ctx context.Context, eng *app.Engine, path string) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".bcode-journal-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	n, err := eng.JournalExport(ctx, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return n, os.Rename(f.Name(), path)
}

func entries(n int64) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}
