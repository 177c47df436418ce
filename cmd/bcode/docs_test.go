package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// A documented command line, parsed: the command path ("task create") and
// the flags it names.
type docCommand struct {
	where string // file:line
	line  string
	path  []string
	flags []string
}

func (c docCommand) String() string { return c.where + ": " + c.line }

// TestDocsNameRealCommands takes every bcode command line that README.md
// and docs/*.md show (in code blocks and in `code` spans) and fails when
// one names a command, subcommand or flag bcode does not have, or one that
// no script in testdata/script runs: docs and code cannot drift apart.
func TestDocsNameRealCommands(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []docCommand
	for _, f := range append([]string{"../../README.md"}, docs...) {
		documented = append(documented, docCommands(t, f)...)
	}
	if len(documented) < 20 {
		t.Fatalf("found only %d documented bcode command lines; the extraction is broken", len(documented))
	}
	scripted := scriptedCommands(t)
	for _, c := range documented {
		flags, err := commandFlags(c.path)
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		key := strings.Join(c.path, " ")
		if !scripted[key] {
			t.Errorf("%s: no script in testdata/script runs bcode %s", c, key)
		}
		for _, f := range c.flags {
			if !flags[f] {
				t.Errorf("%s: bcode %s has no flag --%s", c, key, f)
			} else if !scripted[key+" --"+f] {
				t.Errorf("%s: no script in testdata/script runs bcode %s with --%s", c, key, f)
			}
		}
	}
}

// TestDocsExtraction pins what docCommandsIn reads out of markdown.
func TestDocsExtraction(t *testing.T) {
	md := "Run `bcode task list --status queued` or `bcode task …`; `bcode:ignore-mutant` is not one.\n" +
		"```sh\n" +
		"go run ./cmd/bcode demo    # the main job\n" +
		"bcode evidence --sarif > bcode.sarif; bcode evidence --github\n" +
		"x DIR && bcode check --base HEAD~1 --json --repo DIR\n" +
		"bcode ci [--base REV] [--github | --sarif FILE] [-q]\n" +
		`bcode task create "make it --fast" --selection a.go:1-2` + "\n" +
		"bcode sandbox: module example.com/x was not prefetched\n" +
		"bcode model serve --model F -- --jinja\n" +
		"```\n"
	var got []string
	for _, c := range docCommandsIn("x.md", md) {
		got = append(got, strings.Join(c.path, " ")+" "+fmt.Sprint(c.flags))
	}
	want := []string{
		"task list [status]", "task []", "demo []", "evidence [sarif]", "evidence [github]", "check [base json repo]",
		"ci [base github sarif q]", "task create [selection]", "model serve [model]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("extracted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func docCommands(t *testing.T, file string) []docCommand {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return docCommandsIn(strings.TrimPrefix(file, "../../"), string(b))
}

var codeSpan = regexp.MustCompile("`+([^`\n]+)`+")

// docCommandsIn finds the bcode command lines of a markdown text: each
// line of a fenced code block, and each `code` span, that runs bcode.
func docCommandsIn(name, md string) []docCommand {
	var out []docCommand
	fenced := false
	for i, line := range strings.Split(md, "\n") {
		where := fmt.Sprintf("%s:%d", name, i+1)
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			out = append(out, shellCommands(where, line)...)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			out = append(out, shellCommands(where, m[1])...)
		}
	}
	return out
}

// shellCommands splits a shell line into its commands (;, &&, ||, |) and
// keeps those that run bcode.
func shellCommands(where, line string) []docCommand {
	var out []docCommand
	words := shellWords(line)
	var cmd []string
	flush := func() {
		if c, ok := parseDocCommand(cmd); ok {
			c.where, c.line = where, strings.TrimSpace(line)
			out = append(out, c)
		}
		cmd = nil
	}
	for _, w := range words {
		switch w {
		case ";", "&&", "||":
			flush()
		case "#":
			flush()
			return out
		default:
			cmd = append(cmd, w)
		}
	}
	flush()
	return out
}

// shellWords splits a line into words, keeping quoted text in one word,
// and ;, &&, ||, # (a comment) and > as words of their own.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	end := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			end()
		case r == ';' || r == '>':
			end()
			words = append(words, string(r))
		case (r == '&' || r == '|') && i+1 < len(rs) && rs[i+1] == r:
			end()
			words = append(words, string(r)+string(r))
			i++
		case r == '#' && !inWord:
			end()
			words = append(words, "#")
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	end()
	return words
}

var (
	commandWord  = regexp.MustCompile(`^[a-z][a-z-]*$`)
	docFlag      = regexp.MustCompile(`^--?([a-z][a-z0-9-]*)(=.*)?$`)
	usageBracket = strings.NewReplacer("[", " ", "]", " ", "|", " ")
)

// parseDocCommand reads one command's words: "bcode" (or "go run
// ./cmd/bcode"), the command path, then flags; what follows "--", a
// redirection or a pipe is not bcode's.
func parseDocCommand(words []string) (docCommand, bool) {
	if len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/bcode" {
		words = append([]string{"bcode"}, words[3:]...)
	}
	if len(words) < 2 || words[0] != "bcode" || !commandWord.MatchString(words[1]) {
		return docCommand{}, false
	}
	var c docCommand
	var rest []string
	for _, w := range words[1:] {
		if w == ">" || w == "--" {
			break
		}
		if strings.ContainsAny(w, " \t") {
			rest = append(rest, w) // quoted: one argument, whatever it holds
			continue
		}
		// A usage line's brackets and alternatives: [--github | --sarif FILE].
		rest = append(rest, strings.Fields(usageBracket.Replace(w))...)
	}
	c.path = []string{rest[0]}
	if _, group := commandGroups()[rest[0]]; group && len(rest) > 1 && commandWord.MatchString(rest[1]) {
		c.path = append(c.path, rest[1])
	}
	for _, w := range rest[len(c.path):] {
		if m := docFlag.FindStringSubmatch(w); m != nil {
			c.flags = append(c.flags, m[1])
		}
	}
	return c, true
}

// commandGroups is the commands made of subcommands.
func commandGroups() map[string]commandGroup {
	return map[string]commandGroup{"task": taskGroup, "model": modelGroup, "sandbox": sandboxGroup, "secrets": secretsGroup, "attest": attestGroup, "journal": journalGroup, "bench": benchGroup()}
}

// commandFlags is the flags of a command path, read from its help:
// what a user sees is what the docs are held to.
func commandFlags(path []string) (map[string]bool, error) {
	var stdout, stderr bytes.Buffer
	if code := run(append(append([]string{}, path...), "-h"), &stdout, &stderr); code != 0 {
		return nil, fmt.Errorf("bcode %s -h: exit %d (no such command?): %s", strings.Join(path, " "), code, firstLine(stderr.String()))
	}
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(stdout.String(), -1) {
		flags[m[1]] = true
	}
	return flags, nil
}

// helpFlag is a flag's line in a command's help.
var helpFlag = regexp.MustCompile(`(?m)^  --?([a-z][a-z0-9-]*)(?: (\S+))?$`)

// scriptedCommands is what the scripts run: each command path, and each
// path with " --flag" for every flag it is run with.
func scriptedCommands(t *testing.T) map[string]bool {
	scripts, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts in testdata/script: %v", err)
	}
	seen := map[string]bool{}
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "-- ") {
				break // the archive's files
			}
			// [cond] ! exec bcode ...
			line = regexp.MustCompile(`^(\[[^]]*\]\s*)*[!?]?\s*exec\s+`).ReplaceAllString(line, "")
			c, ok := parseDocCommand(shellWords(line))
			if !ok {
				continue
			}
			key := strings.Join(c.path, " ")
			seen[key] = true
			for _, f := range c.flags {
				seen[key+" --"+f] = true
			}
		}
	}
	return seen
}

// TestCLIConventions holds every command and subcommand to the
// conventions of cli.go: -h and --help print the help to stdout and exit
// 0; an unknown flag prints the error and the usage line to stderr and
// exits 2; the usage line and the flag list name what the user fills in
// with UPPER words, and nothing in the help is back-quoted.
func TestCLIConventions(t *testing.T) {
	var paths [][]string
	for name := range commands {
		g, group := commandGroups()[name]
		paths = append(paths, []string{name})
		if group {
			for _, sub := range g.subcommandNames() {
				paths = append(paths, []string{name, sub})
			}
		}
	}
	sort.Slice(paths, func(i, j int) bool { return strings.Join(paths[i], " ") < strings.Join(paths[j], " ") })
	if len(paths) < 20 {
		t.Fatalf("only %d commands", len(paths))
	}
	for _, p := range paths {
		name := strings.Join(p, " ")
		t.Run(name, func(t *testing.T) {
			for _, h := range []string{"-h", "--help"} {
				var stdout, stderr bytes.Buffer
				code := run(append(append([]string{}, p...), h), &stdout, &stderr)
				if code != 0 || stderr.Len() > 0 || !strings.HasPrefix(stdout.String(), "usage: bcode "+name) {
					t.Errorf("bcode %s %s: exit %d, stdout %q, stderr %q; want exit 0 and the help on stdout", name, h, code, firstLine(stdout.String()), stderr.String())
				}
				checkHelp(t, name, stdout.String())
			}
			var stdout, stderr bytes.Buffer
			code := run(append(append([]string{}, p...), "--no-such-flag"), &stdout, &stderr)
			errText := stderr.String()
			if _, group := commandGroups()[name]; group {
				// a group takes a subcommand first: the flag is one
				if code != exitUsage || !strings.Contains(errText, `unknown subcommand "--no-such-flag"`) {
					t.Errorf("bcode %s --no-such-flag: exit %d, stderr %q", name, code, errText)
				}
			} else if code != exitUsage || stdout.Len() > 0 || !strings.Contains(errText, "no-such-flag") || !strings.Contains(errText, "\nusage: bcode "+name) {
				t.Errorf("bcode %s --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2, the error and the usage line on stderr", name, code, stdout.String(), errText)
			}
		})
	}
	t.Run("bcode", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(nil, &stdout, &stderr); code != exitUsage || stdout.Len() > 0 || !strings.HasPrefix(stderr.String(), "usage: bcode COMMAND") {
			t.Errorf("bcode alone: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", code, stdout.String(), firstLine(stderr.String()))
		}
		for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
			stdout.Reset()
			stderr.Reset()
			if code := run(args, &stdout, &stderr); code != 0 || stderr.Len() > 0 || !strings.HasPrefix(stdout.String(), "usage: bcode COMMAND") {
				t.Errorf("bcode %s: exit %d, stderr %q", args[0], code, stderr.String())
			}
			checkHelp(t, "", stdout.String())
		}
		stdout.Reset()
		stderr.Reset()
		if code := run([]string{"help", "task", "list"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "usage: bcode task list") {
			t.Errorf("bcode help task list: exit %d, stdout %q", code, firstLine(stdout.String()))
		}
		stdout.Reset()
		stderr.Reset()
		if code := run([]string{"nosuch"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), `unknown command "nosuch"`) {
			t.Errorf("bcode nosuch: exit %d, stderr %q", code, stderr.String())
		}
	})
}

// placeholder is what a user fills in: UPPER words joined by - : = @
// (FILE:L1-L2, ENDPOINT=N, MODULE@VERSION), maybe with a file extension
// (FILE.gguf) or a trailing ... (repeatable), or a choice of literal
// lowercase words (host|docker).
var placeholder = regexp.MustCompile(`^(?:\.\.\.|[A-Z][A-Z0-9_]*(?:[-:=@][A-Z][A-Z0-9_]*)*(?:\.[a-z0-9]+)?(?:\.\.\.)?|[a-z]+(?:\|[a-z]+)+)$`)

// checkHelp checks a help text's usage line and flag list.
func checkHelp(t *testing.T, name, help string) {
	t.Helper()
	if strings.Contains(help, "`") {
		t.Errorf("bcode %s -h has a back-quoted word:\n%s", name, help)
	}
	usage, _, _ := strings.Cut(strings.TrimPrefix(help, "usage: "), "\n")
	words := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(usage))
	for i, w := range words {
		if i < len(strings.Fields(name))+1 || strings.HasPrefix(w, "-") || w == "|" {
			continue // bcode, the command path, flags (--json|--sarif), -- and a | between flags
		}
		if !placeholder.MatchString(w) {
			t.Errorf("bcode %s: usage line %q: %q is not an UPPER placeholder", name, usage, w)
		}
	}
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		if m[2] != "" && !placeholder.MatchString(m[2]) {
			t.Errorf("bcode %s: flag --%s shows placeholder %q, not an UPPER word (back-quote one in its usage)", name, m[1], m[2])
		}
	}
}
