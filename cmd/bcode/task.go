package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

func init() {
	register(command{
		name:    "task",
		summary: "durable agent tasks: create, list, run, status, events, diff, export, cancel, resume, accept, reject",
		run:     cmdTask,
	})
}

// taskGroup is bcode task: every subcommand takes --repo DIR, --state DIR
// and --ledger URL (stateFlags).
var taskGroup = commandGroup{
	name: "bcode task",
	about: `  create GOAL [--selection FILE:L1-L2] [--base REV] [--criterion TEXT]...   record a task, print its ID
  list [--status STATUS]... [--repo DIR] [--json]   the tasks, most recently updated first
  run TASK                        work on it: lease, worktree, attempts, check (needs a model)
  status [TASK] [--json]          one task in detail, or every task of the repository
  events TASK [--follow] [--json] what happened, in order
  diff TASK                       the task branch against its base, and the digest of the change (on stderr)
  export TASK --diff FILE [--attestation FILE]   the change as a canonical diff, its digest, a signed attestation
  cancel TASK [--wait DUR]        stop it (a running runner stops within one heartbeat)
  resume TASK [--attempts N] [--turns N] [--tokens N] [--wall DUR]   run it again, with more budget
  accept TASK [--force] [--digest DIGEST]   land a verified task on your current branch (never pushes); with --digest only the change you reviewed
  reject TASK                     remove its worktree and branch; the record stays
  approve-module TASK MODULE@VERSION   let the host fetch a module the task needs that the base's go.sum does not list

Every subcommand takes --repo DIR, --state DIR and --ledger URL (a Postgres ledger a team shares; see bcode runner -h).`,
	subs: map[string]subcommand{
		"create": taskCreate, "list": taskList, "run": taskRun, "status": taskStatus, "events": taskEvents, "diff": taskDiff,
		"cancel": taskCancel, "resume": taskResume, "accept": taskAccept, "reject": taskReject,
	},
}

func cmdTask(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	return taskGroup.run(ctx, eng, args, stdout, stderr)
}

// taskCmd is what every subcommand shares: its flags, the positional
// arguments (flags may come after them), and the engine.
type taskCmd struct {
	eng    *app.Engine
	name   string
	fs     *cliFlags
	st     stateFlags
	stderr io.Writer
	args   []string
}

// newTaskCmd makes the subcommand whose usage line (after "bcode task ")
// is usage.
func newTaskCmd(eng *app.Engine, usage string, stdout, stderr io.Writer) *taskCmd {
	fs := newFlags("bcode task "+usage, stdout, stderr)
	c := &taskCmd{eng: eng, name: strings.TrimPrefix(fs.Name(), "bcode task "), fs: fs, stderr: stderr}
	c.st.register(c.fs.FlagSet)
	return c
}

// parse parses the flags and keeps the positional arguments; false: exit
// with code (the help or the error was printed).
func (c *taskCmd) parse(args []string) (code int, ok bool) {
	c.args, code, ok = c.fs.parse(args)
	return code, ok
}

func (c *taskCmd) fail(format string, a ...any) int {
	errorf(c.stderr, "bcode task "+c.name, format, a...)
	return 1
}

func (c *taskCmd) usageErr(format string, a ...any) int {
	return c.fs.usageErr(format, a...)
}

// oneID checks that exactly one task ID was given.
func (c *taskCmd) oneID() (string, bool) {
	if len(c.args) != 1 {
		return "", false
	}
	return c.args[0], true
}

// openOne is the start every single-task subcommand shares: parse the
// flags, take exactly one task ID, point the engine at the ledger. A false
// ok means stop and exit with code (the reason was printed).
func (c *taskCmd) openOne(args []string) (id string, code int, ok bool) {
	if code, ok := c.parse(args); !ok {
		return "", code, false
	}
	id, ok = c.oneID()
	if !ok {
		return "", c.usageErr("give one task ID"), false
	}
	if err := c.st.use(c.eng); err != nil {
		return "", c.fail("%v", err), false
	}
	return id, 0, true
}

// explain turns the engine's errors into what the user can do.
func explain(id string, err error) string {
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return fmt.Sprintf("no task %q in this ledger (list them with bcode task list; pass --state if they live elsewhere)", id)
	case errors.Is(err, app.ErrTaskRunning):
		return err.Error()
	case errors.Is(err, engine.ErrLeaseHeld):
		return fmt.Sprintf("%v: another runner is working on it (watch it with bcode task events %s --follow, or stop it with bcode task cancel %s)", err, id, id)
	}
	return err.Error()
}

func taskCreate(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "create [GOAL] [--reproduce CMD] [--selection FILE:L1-L2] [--base REV] [--criterion TEXT]... [--json]", stdout, stderr)
	reproduce := c.fs.String("reproduce", "", "a failing test command (`CMD`: go test ./pkg -run TestX, python3 -m pytest tests/t.py::test_x) run on the base before any model call; its failing tests become the task's oracle")
	selection := c.fs.String("selection", "", "the code the task is about: `FILE:L1-L2` (or FILE:L)")
	base := c.fs.String("base", "", "the commit `REV` the task starts from (default: HEAD)")
	var criteria multiFlag
	c.fs.Var(&criteria, "criterion", "an acceptance criterion, in words: `TEXT` (repeatable)")
	asJSON := c.fs.Bool("json", false, "print the task as JSON")
	if code, ok := c.parse(args); !ok {
		return code
	}
	goal, msg := createGoal(c.args, *reproduce)
	if msg != "" {
		return c.usageErr("%s", msg)
	}
	if err := c.st.use(eng); err != nil {
		return c.fail("%v", err)
	}
	in := app.TaskRequest{Repo: c.st.repo, Goal: goal, Base: *base, Criteria: criteria, Reproduce: *reproduce}
	if *selection != "" {
		repo, err := repoRoot(c.st.repo)
		if err != nil {
			return c.fail("%v", err)
		}
		sel, err := parseSelection(repo, *selection)
		if err != nil {
			return c.fail("%v", err)
		}
		in.Selection = sel
	}
	t, err := eng.CreateTask(ctx, in)
	if err != nil {
		return c.fail("%v", err)
	}
	if *asJSON {
		return printJSON(stdout, t)
	}
	fmt.Fprintln(stdout, t.ID)
	return 0
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, "; ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func printJSON(w io.Writer, v any) int {
	b, err := shown.JSONIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	w.Write(append(b, '\n'))
	return 0
}

func taskRun(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "run TASK", stdout, stderr)
	id, code, ok := c.openOne(args)
	if !ok {
		return code
	}
	res, err := eng.RunTask(ctx, id, app.RunOptions{OnEvent: func(ev engine.Event) { printEvent(stdout, ev) }})
	return c.finish(id, res, err)
}

// finish prints how a run ended; a run that stopped on a signal exits 130.
func (c *taskCmd) finish(id string, res *app.RunResult, err error) int {
	if res != nil {
		fmt.Fprintf(c.stderr, "task %s: %s", id, res.Task.Status)
		if res.Task.Reason != "" {
			fmt.Fprintf(c.stderr, " (%s)", shown.Line(res.Task.Reason))
		}
		fmt.Fprintln(c.stderr)
		if res.Task.Status == engine.TaskVerified {
			fmt.Fprintf(c.stderr, "review it with bcode task diff %s; land it with bcode task accept %s\n", id, id)
		}
	}
	if errors.Is(err, app.ErrStopped) {
		fmt.Fprintln(c.stderr, stoppedMessage(id, err))
		return 130
	}
	if err != nil {
		return c.fail("%s", explain(id, err))
	}
	return 0
}

// stoppedMessage is the last line of a run a signal stopped: which signal,
// whether the task's work was checkpointed, and the command that goes on.
func stoppedMessage(id string, err error) string {
	why := "interrupted"
	// The runner's error carries the cause, which names the signal
	// ("run stopped: interrupted by SIGTERM"; see signalContext).
	_, cause, _ := strings.Cut(err.Error(), app.ErrStopped.Error()+": ")
	if by, _, _ := strings.Cut(cause, "\n"); strings.HasPrefix(by, "interrupted by ") {
		why = by
	}
	done := "checkpointed"
	if strings.Contains(err.Error(), "stopping cleanly") {
		done = "stopped before its last edits were committed (the next run commits them)"
	}
	return fmt.Sprintf("bcode: %s; task %s %s; resume with `bcode task resume %s`", why, id, done, id)
}

func taskResume(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "resume TASK [--attempts N] [--turns N] [--tokens N] [--wall DUR]", stdout, stderr)
	var more engine.Budgets
	intFlag(c.fs, &more.MaxAttempts, "attempts", 0, 0, maxMoreAttempts, "allow this many more attempts")
	intFlag(c.fs, &more.MaxTurns, "turns", 0, 0, maxMoreTurns, "allow this many more agent turns")
	intFlag(c.fs, &more.MaxTokens, "tokens", 0, 0, maxMoreTokens, "allow this many more model tokens")
	durationFlag(c.fs, &more.WallClock, "wall", 0, 0, maxMoreWall, "allow this much more wall-clock time")
	if code, ok := c.parse(args); !ok {
		return code
	}
	id, ok := c.oneID()
	if !ok {
		return c.usageErr("give one task ID")
	}
	if more.MaxAttempts < 0 || more.MaxTurns < 0 || more.MaxTokens < 0 || more.WallClock < 0 {
		return c.usageErr("budgets only grow: give positive amounts")
	}
	if err := c.st.use(eng); err != nil {
		return c.fail("%v", err)
	}
	res, err := eng.ResumeTask(ctx, id, more, app.RunOptions{OnEvent: func(ev engine.Event) { printEvent(stdout, ev) }})
	return c.finish(id, res, err)
}

func taskStatus(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "status [TASK] [--json]", stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print JSON")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if len(c.args) > 1 {
		return c.usageErr("give at most one task ID")
	}
	if err := c.st.use(eng); err != nil {
		return c.fail("%v", err)
	}
	if len(c.args) == 0 {
		tasks, err := eng.ListTasks(ctx, c.st.repo)
		if err != nil {
			return c.fail("%v", err)
		}
		if *asJSON {
			if tasks == nil {
				tasks = []engine.Task{}
			}
			return printJSON(stdout, tasks)
		}
		if len(tasks) == 0 {
			fmt.Fprintln(stdout, `no tasks in this repository (create one with bcode task create GOAL)`)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATUS\tVERDICT\tUPDATED\tGOAL")
		for _, t := range tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Status, dash(t.Verdict), t.UpdatedAt.Local().Format("2006-01-02 15:04"), oneLineGoal(t.Goal))
		}
		tw.Flush()
		return 0
	}
	id := c.args[0]
	st, err := eng.TaskStatus(ctx, id)
	if err != nil {
		return c.fail("%s", explain(id, err))
	}
	if *asJSON {
		return printJSON(stdout, st)
	}
	t := st.Task
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	// What accepting would land for git to act on comes first: it is
	// what the user must look at before anything else.
	for _, f := range st.Findings {
		fmt.Fprintf(tw, "FINDING\t%s %s: %s\n", shown.Line(f.Code), shown.Line(f.Path), shown.Line(f.Message))
	}
	fmt.Fprintf(tw, "task\t%s\n", t.ID)
	fmt.Fprintf(tw, "goal\t%s\n", oneLineGoal(t.Goal))
	fmt.Fprintf(tw, "status\t%s\n", t.Status)
	if t.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", shown.Line(t.Reason))
	}
	fmt.Fprintf(tw, "verdict\t%s\n", dash(t.Verdict))
	fmt.Fprintf(tw, "repo\t%s\n", shown.Line(t.Repo))
	fmt.Fprintf(tw, "base\t%s\n", t.Base)
	fmt.Fprintf(tw, "branch\t%s %s\n", shown.Line(t.Branch), dash(st.Head))
	if t.Selection != nil {
		fmt.Fprintf(tw, "selection\t%s:%d-%d (sha256 %.12s)\n", shown.Line(t.Selection.File), t.Selection.StartLine, t.Selection.EndLine, t.Selection.SHA256)
	}
	for _, cr := range t.Criteria {
		fmt.Fprintf(tw, "criterion\t%s\n", shown.Line(cr))
	}
	printOracle(tw, st.Oracle, st.Level.Reached, st.Level.Required, st.Level.Missing)
	b, u := t.Budgets, st.Usage
	fmt.Fprintf(tw, "budgets\tattempts %d/%d, turns %d/%d, tokens %d/%d, wall %s/%s\n", u.Attempts, b.MaxAttempts, u.Turns, b.MaxTurns,
		u.Tokens, b.MaxTokens, u.Wall.Round(time.Second), b.WallClock)
	if l := st.Lease; l != nil {
		state := "live"
		if !l.Live {
			state = "stale"
		}
		fmt.Fprintf(tw, "lease\t%s (pid %d), fence %d, %s until %s\n", shown.Line(l.Owner), l.PID, l.Fence, state, l.Expires.Local().Format(time.TimeOnly))
	}
	for _, w := range st.Worktrees {
		fmt.Fprintf(tw, "worktree\t%s\n", shown.Line(w))
	}
	for _, s := range st.Skipped {
		fmt.Fprintf(tw, "not committed\t%s %s: %s\n", shown.Line(s.Reason), shown.Line(s.Path), shown.Line(s.Detail))
	}
	for _, a := range st.Attempts {
		line := fmt.Sprintf("#%d %s", a.Number, a.Status)
		if a.Verdict != "" {
			line += " " + string(a.Verdict)
		}
		if a.Note != "" {
			line += ": " + oneLineGoal(a.Note)
		}
		fmt.Fprintf(tw, "attempt\t%s\n", line)
	}
	tw.Flush()
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLineGoal is a goal (or a note) on one line of at most 80 characters
// before its hidden runes are made visible (shown.Flat).
func oneLineGoal(s string) string {
	return shown.Flat(clip(strings.Join(strings.Fields(s), " "), 80))
}

// clip shortens s to at most n runes, ending in "..." when it cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// printEvent shows an event on one line: its data is JSON whose strings
// come from the agent, clipped before its hidden runes are made visible.
func printEvent(w io.Writer, ev engine.Event) {
	fmt.Fprintf(w, "%6d  %s  %-22s %s\n", ev.Seq, ev.At.Local().Format("15:04:05.000"), shown.Line(string(ev.Kind)), shown.Line(clip(string(ev.Data), 200)))
}

func taskEvents(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "events TASK [--follow] [--json]", stdout, stderr)
	follow := c.fs.Bool("follow", false, "keep printing events until the task settles (Ctrl-C stops)")
	asJSON := c.fs.Bool("json", false, "print one JSON object per line")
	id, code, ok := c.openOne(args)
	if !ok {
		return code
	}
	show := func(ev engine.Event) error {
		if *asJSON {
			b, err := shown.JSON(ev)
			if err != nil {
				return err
			}
			_, err = stdout.Write(append(b, '\n'))
			return err
		}
		printEvent(stdout, ev)
		return nil
	}
	err := eng.TaskEvents(ctx, id, 0, *follow, show)
	if *follow && errors.Is(err, context.Canceled) {
		return 0
	}
	if err != nil {
		return c.fail("%s", explain(id, err))
	}
	return 0
}

func taskDiff(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "diff TASK", stdout, stderr)
	id, code, ok := c.openOne(args)
	if !ok {
		return code
	}
	r, err := eng.TaskReview(ctx, id)
	if err != nil {
		return c.fail("%s", explain(id, err))
	}
	// Changed lines are the agent's: Text keeps the diff's lines and
	// shows every control, escape and bidi override in them.
	io.WriteString(stdout, shown.Text(string(r.Diff)))
	// On stderr, so that stdout stays the diff alone.
	fmt.Fprintf(c.stderr, "change %s (task branch at %.12s); to land exactly this change: bcode task accept %s --digest %s\n", r.Digest, r.Head, id, r.Digest)
	return 0
}

func taskCancel(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "cancel TASK [--wait DUR]", stdout, stderr)
	var wait time.Duration
	durationFlag(c.fs, &wait, "wait", 2*app.LeaseTTL, time.Second, maxTimeout, "how long to wait for a running runner to stop")
	id, code, ok := c.openOne(args)
	if !ok {
		return code
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := eng.CancelTask(wctx, id); err != nil {
		return c.fail("%s", explain(id, err))
	}
	fmt.Fprintf(stdout, "task %s cancelled\n", id)
	return 0
}

func taskAccept(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "accept TASK [--force] [--digest DIGEST]", stdout, stderr)
	force := c.fs.Bool("force", false, "land a task that is not verified, or that lands files git acts on (recorded as forced)")
	digest := c.fs.String("digest", "", "the change `DIGEST` you reviewed, as bcode task diff prints it: refuse, landing nothing, unless the task's change is still that one")
	id, code, ok := c.openOne(args)
	if !ok {
		return code
	}
	res, err := eng.AcceptTask(ctx, id, *force, *digest)
	if err != nil {
		return c.fail("%s", explain(id, err))
	}
	fmt.Fprintf(stdout, "task %s accepted: %d commit(s) landed on %s by %s (%.12s..%.12s); nothing was pushed\n",
		id, len(res.Commits), shown.Line(res.Branch), res.Method, res.From, res.To)
	fmt.Fprintf(stdout, "approved change %s; the journal records it (bcode journal verify)\n", res.Digest)
	for _, f := range res.Findings {
		fmt.Fprintf(stdout, "landed with --force: %s %s: %s\n", shown.Line(f.Code), shown.Line(f.Path), shown.Line(f.Message))
	}
	if res.Forced {
		fmt.Fprintln(stdout, "note: the task was not verified, or landed files git acts on; the ledger records that it was accepted with --force")
	}
	return 0
}

func taskReject(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "reject TASK", stdout, stderr)
	id, code, ok := c.openOne(args)
	if !ok {
		return code
	}
	res, err := eng.RejectTask(ctx, id)
	if err != nil {
		return c.fail("%s", explain(id, err))
	}
	fmt.Fprintf(stdout, "task %s rejected: removed %d worktree(s)", id, len(res.Worktrees))
	if res.Branch != "" {
		fmt.Fprintf(stdout, " and branch %s (was %.12s)", shown.Line(res.Branch), res.Head)
	}
	fmt.Fprintln(stdout, "; the ledger keeps its record")
	return 0
}

// userName is who the ledger says cancelled, accepted or rejected.
func userName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "the user"
}
