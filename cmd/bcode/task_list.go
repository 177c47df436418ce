package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
)

// taskListItem is one task of bcode task list --json. Its names are a
// promise to scripts: fields may be added, never renamed.
type taskListItem struct {
	ID      string            `json:"id"`
	Status  engine.TaskStatus `json:"status"`
	Goal    string            `json:"goal"`
	Branch  string            `json:"branch"`
	Updated time.Time         `json:"updated"`
	Repo    string            `json:"repo"`
}

// taskList is bcode task list: every task in the ledger, or those of one
// repository (--repo) or in some statuses (--status), the most recently
// updated first.
func taskList(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	c := newTaskCmd(eng, "list [--status STATUS]... [--repo DIR] [--json]", stdout, stderr)
	c.fs.about = "Lists the tasks in the ledger, the most recently updated first: every task, or those of the\n" +
		"repository --repo names. --status keeps the tasks in the statuses it names (repeat it, or separate\n" +
		"them with commas): " + statusNames() + "."
	var statuses multiFlag
	c.fs.Var(&statuses, "status", "only tasks in `STATUS` (repeatable; or a comma-separated list)")
	asJSON := c.fs.Bool("json", false, "print a JSON array of {id, status, goal, branch, updated, repo}")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if len(c.args) > 0 {
		return c.usageErr("unexpected argument %q (filter with --status or --repo)", c.args[0])
	}
	filter := app.TaskFilter{}
	var err error
	if filter.Statuses, err = app.ParseTaskStatuses(statuses); err != nil {
		return c.usageErr("--status: %v", err)
	}
	// --repo is every task subcommand's, with "." as its default; here
	// it filters only when given.
	if c.fs.set("repo") {
		filter.Repo = c.st.repo
	}
	if err := c.st.use(eng); err != nil {
		return c.fail("%v", err)
	}
	tasks, err := eng.FindTasks(ctx, filter)
	if err != nil {
		return c.fail("%v", err)
	}
	if *asJSON {
		items := make([]taskListItem, 0, len(tasks))
		for _, t := range tasks {
			items = append(items, taskListItem{ID: t.ID, Status: t.Status, Goal: t.Goal, Branch: t.Branch, Updated: t.UpdatedAt, Repo: t.Repo})
		}
		return printJSON(stdout, items)
	}
	if len(tasks) == 0 {
		if len(filter.Statuses) > 0 || filter.Repo != "" {
			fmt.Fprintln(stdout, "no task matches")
		} else {
			fmt.Fprintln(stdout, "no tasks in this ledger (create one with bcode task create GOAL)")
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tUPDATED\tBRANCH\tGOAL")
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", shown.Line(t.ID), shown.Line(string(t.Status)), t.UpdatedAt.Local().Format("2006-01-02 15:04"),
			shown.Line(dash(t.Branch)), oneLineGoal(t.Goal))
	}
	tw.Flush()
	return 0
}

// statusNames is every task status, for the help.
func statusNames() string {
	s := ""
	for i, st := range app.TaskStatuses {
		if i > 0 {
			s += ", "
		}
		s += string(st)
	}
	return s
}
