package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/engine/app"
)

// bcode's command line follows go's and git's conventions, here and only
// here, so no command can differ:
//
//   - -h or --help (anywhere among the flags) prints the command's help to
//     stdout and exits 0;
//   - a usage error (an unknown flag, a bad flag value, a missing or extra
//     argument) prints the error, the usage line and how to get the help to
//     stderr, and exits 2;
//   - what the user fills in is an UPPER word (TASK, DIR, REV), in usage
//     lines and in the flag lists alike; a choice among literal words is
//     written a|b.
//
// cliFlags holds a command's flags and parses them; commandGroup dispatches
// a command made of subcommands (bcode task create).

// exitUsage is the exit code of a usage error.
const exitUsage = 2

// cliFlags is one command's flags.
type cliFlags struct {
	*flag.FlagSet
	usage  string // the usage line, without "usage: "
	about  string // what the help says after the usage line
	stdout io.Writer
	stderr io.Writer
}

// newFlags makes the flags of the command that usage names: its leading
// lowercase words ("bcode task create" in "bcode task create GOAL").
func newFlags(usage string, stdout, stderr io.Writer) *cliFlags {
	fs := flag.NewFlagSet(commandName(usage), flag.ContinueOnError)
	// The flag package's own printing is replaced by help and usageErr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cliFlags{FlagSet: fs, usage: usage, stdout: stdout, stderr: stderr}
}

// commandName is the leading words of a usage line that name the command.
func commandName(usage string) string {
	var words []string
	for _, w := range strings.Fields(usage) {
		if strings.TrimLeft(w, "abcdefghijklmnopqrstuvwxyz-") != "" || strings.HasPrefix(w, "-") {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// parse parses args and returns the positional arguments. Flags may come
// before, between and after them; "--" ends the flags. When ok is false
// the command exits with code: 0 after the help, 2 after a usage error,
// either already printed.
func (f *cliFlags) parse(args []string) (positional []string, code int, ok bool) {
	for {
		err := f.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			f.help(f.stdout)
			return nil, 0, false
		}
		if err != nil {
			return nil, f.usageErr("%v", err), false
		}
		rest := f.Args()
		if len(rest) == 0 {
			return positional, 0, true
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), 0, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// noArgs parses args for a command that takes none.
func (f *cliFlags) noArgs(args []string) (code int, ok bool) {
	rest, code, ok := f.parse(args)
	if ok && len(rest) > 0 {
		return f.usageErr("unexpected argument %q", rest[0]), false
	}
	return code, ok
}

// usageErr prints a usage error and returns its exit code.
func (f *cliFlags) usageErr(format string, a ...any) int {
	errorf(f.stderr, f.Name(), format, a...)
	fmt.Fprintf(f.stderr, "usage: %s\nRun '%s -h' for help.\n", f.usage, f.Name())
	return exitUsage
}

// set reports whether the user gave the flag name.
func (f *cliFlags) set(name string) bool {
	given := false
	f.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	return given
}

// help prints the usage line, what the command is about and its flags.
func (f *cliFlags) help(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n", f.usage)
	if f.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(f.about))
	}
	var flags []*flag.Flag
	f.VisitAll(func(fl *flag.Flag) { flags = append(flags, fl) })
	if len(flags) == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	for _, fl := range flags {
		printFlag(w, fl)
	}
}

// printFlag prints one flag as flag.PrintDefaults does, but with the
// double dash of the usage lines (a one-letter flag keeps one) and the
// flag's placeholder as its usage back-quotes it.
func printFlag(w io.Writer, fl *flag.Flag) {
	dash := "--"
	if len(fl.Name) == 1 {
		dash = "-"
	}
	placeholder, usage := flag.UnquoteUsage(fl)
	line := "  " + dash + fl.Name
	if placeholder != "" {
		line += " " + placeholder
	}
	if !zeroDefault(fl.DefValue) {
		usage += fmt.Sprintf(" (default %s)", fl.DefValue)
	}
	fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
}

// zeroDefault reports whether a flag's default goes without saying.
func zeroDefault(v string) bool {
	switch v {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// subcommand runs one subcommand of a commandGroup.
type subcommand func(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int

// commandGroup is a command whose first argument names a subcommand.
type commandGroup struct {
	name  string // "bcode task"
	about string // the subcommands, one a line, for the help
	subs  map[string]subcommand
	// hidden subcommands are run but not listed (bcode sandbox gocache is
	// for the go command inside a container, not for people).
	hidden map[string]bool
}

func (g commandGroup) usage() string { return g.name + " SUBCOMMAND [ARG...]" }

// run dispatches args to a subcommand; "help SUBCOMMAND" is the
// subcommand's -h.
func (g commandGroup) run(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "%s: give a subcommand\n", g.name)
		g.help(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		if len(args) > 1 && args[0] == "help" {
			return g.run(ctx, eng, []string{args[1], "-h"}, stdout, stderr)
		}
		g.help(stdout)
		return 0
	}
	sub, ok := g.subs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown subcommand %q\nusage: %s\nRun '%s -h' for help.\n", g.name, args[0], g.usage(), g.name)
		return exitUsage
	}
	return sub(ctx, eng, args[1:], stdout, stderr)
}

func (g commandGroup) help(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", g.usage(), strings.TrimRight(g.about, "\n"))
	fmt.Fprintf(w, "\nRun '%s SUBCOMMAND -h' for a subcommand's flags.\n", g.name)
}

// subcommandNames is the group's listed subcommands, sorted.
func (g commandGroup) subcommandNames() []string {
	var names []string
	for n := range g.subs {
		if !g.hidden[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
