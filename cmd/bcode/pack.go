package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

func init() {
	register(command{
		name:    "pack",
		summary: "build the context pack for a goal, a selection or a task, within a token budget",
		run:     cmdPack,
	})
}

// tokenizerProbe is how long bcode pack waits for the model server to
// show it is llama-server (/props) and count (/tokenize) before counting
// with the estimate instead.
const tokenizerProbe = 300 * time.Millisecond

func cmdPack(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode pack [--goal TEXT] [--selection FILE:L1-L2] [--task TASK] [--budget N] [--json] [--tokenizer URL] [--repo DIR] [--state DIR]", stdout, stderr)
	fs.about = "Prints the context pack an agent would get for the goal, the selection or the task: markdown, or\n" +
		"JSON with --json, within the token budget. Tokens are counted by the configured model server when it is\n" +
		"llama-server (its /props says so), else by a conservative local estimate; the pack says which."
	var st stateFlags
	st.register(fs.FlagSet)
	goal := fs.String("goal", "", "what the change is for, in words: `TEXT`")
	selection := fs.String("selection", "", "the code the change is about: `FILE:L1-L2` (or FILE:L)")
	task := fs.String("task", "", "the ID of a task, `TASK`, whose history to include")
	var budget int
	intFlag(fs, &budget, "budget", app.DefaultPackBudget, app.MinPackBudget, maxPackBudget, "token budget the pack never exceeds")
	asJSON := fs.Bool("json", false, "print the pack as JSON instead of markdown")
	tokenizer := fs.String("tokenizer", "", "the llama-server `URL` to count tokens with (default: [model] endpoint of .bcode/config.toml)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		errorf(stderr, "bcode pack", format, a...)
		return 2
	}
	if *goal == "" && *selection == "" && *task == "" {
		return fs.usageErr("nothing to pack for: give --goal, --selection or --task")
	}
	if *tokenizer != "" {
		if err := checkEndpoint(*tokenizer); err != nil {
			return fs.usageErr("--tokenizer: %v", err)
		}
	}
	repo, err := repoRoot(st.repo)
	if err != nil {
		return fail("%v", err)
	}
	req := app.PackRequest{Repo: repo, Goal: *goal, TaskID: *task, Budget: budget, Tokenizer: *tokenizer}
	if *selection != "" {
		sel, err := parseSelection(repo, *selection)
		if err != nil {
			return fail("%v", err)
		}
		req.Selection = sel
	}
	req.TokenizerProbe = tokenizerProbe
	req.Note = func(note string) { fmt.Fprintf(stderr, "bcode pack: %s\n", note) }
	// The index is kept in the ledger; a pack without a task is still
	// useful without one.
	switch err := st.use(eng); {
	case err == nil:
		req.KeepIndex = true
	case *task != "":
		return fail("--task needs the ledger: %v", err)
	default:
		req.Note(fmt.Sprintf("ledger unavailable (%v): indexing in memory only", err))
	}
	p, err := eng.Pack(ctx, req)
	if errors.Is(err, engine.ErrNotFound) && *task != "" {
		where, _ := st.ledgerPath()
		return fail("no task %q in the ledger at %s (list them with bcode task list; pass --state if they live elsewhere)", *task, where)
	}
	if err != nil {
		return fail("%v", err)
	}
	if *asJSON {
		js, err := p.JSON()
		if err == nil {
			js, err = shown.JSONText(js)
		}
		if err != nil {
			return fail("%v", err)
		}
		stdout.Write(append(js, '\n'))
	} else {
		io.WriteString(stdout, shown.Text(p.Markdown()))
	}
	summary := fmt.Sprintf("pack: %d of %d tokens, %d sections, %d files, built in %s", p.Total, p.Budget, len(p.Sections), len(p.Files()), p.BuildTime.Round(time.Millisecond))
	if s := p.IndexStats; s != nil {
		summary += fmt.Sprintf("; index: %d packages, %d reused, %d re-indexed", s.Units, s.Reused, len(s.Reindexed))
		if len(s.Pending) > 0 {
			summary += fmt.Sprintf(", %d not yet indexed (the pack's notes say why)", len(s.Pending))
		}
	}
	fmt.Fprintln(stderr, summary)
	return 0
}

// repoRoot checks that dir is the top of a git checkout.
func repoRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory (pass --repo)", abs)
	}
	if _, err := os.Lstat(filepath.Join(abs, ".git")); err != nil {
		return "", fmt.Errorf("%s is not a git repository (no .git): run bcode pack at the top of a checkout or pass --repo", abs)
	}
	return abs, nil
}

// parseSelection reads FILE:L1-L2 or FILE:L. FILE may be absolute (inside
// the repository) or relative to it.
func parseSelection(repo, s string) (*engine.Selection, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return nil, fmt.Errorf("--selection %q: want FILE:L1-L2, e.g. internal/x.go:10-24", s)
	}
	file, lines := s[:i], s[i+1:]
	l1s, l2s, ranged := strings.Cut(lines, "-")
	l1, err1 := strconv.Atoi(l1s)
	l2 := l1
	var err2 error
	if ranged {
		l2, err2 = strconv.Atoi(l2s)
	}
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("--selection %q: lines %q are not L1-L2 with whole numbers", s, lines)
	}
	if l1 < 1 || l2 < l1 {
		return nil, fmt.Errorf("--selection %q: want 1 <= L1 <= L2", s)
	}
	if filepath.IsAbs(file) {
		rel, err := filepath.Rel(repo, file)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("--selection: %s is outside the repository %s", file, repo)
		}
		file = rel
	}
	file = filepath.ToSlash(filepath.Clean(file))
	if file == ".." || strings.HasPrefix(file, "../") {
		return nil, fmt.Errorf("--selection: %s is outside the repository %s", file, repo)
	}
	return &engine.Selection{File: file, StartLine: l1, EndLine: l2}, nil
}

// checkEndpoint refuses a --tokenizer that cannot be a llama-server
// address. One that is well formed but does not answer is not an error: the
// pack is then counted with the estimate, and the pack's notes say so.
func checkEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v (give the llama-server address, like %s)", s, err, config.DefaultEndpoint)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%q is not an http(s) URL with a host (give the llama-server address, like %s)", s, config.DefaultEndpoint)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q has port %q, not one from 1 to 65535", s, p)
		}
	}
	return nil
}
