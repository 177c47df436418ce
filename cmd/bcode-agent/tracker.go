//go:build linux

package main

import (
	"fmt"
	"strings"
)

// tracker is the agent's plan: items with a status, so a long task keeps
// its thread through condensation (the plan survives it verbatim).
type tracker struct {
	items []planItem
}

type planItem struct {
	Title  string `json:"title"`
	Status string `json:"status"`
}

type trackerArgs struct {
	Command string     `json:"command"`
	Items   []planItem `json:"items"`
	ID      int        `json:"id"`
	Status  string     `json:"status"`
}

var planStatuses = []string{"todo", "in_progress", "done", "blocked"}

func (t *tracker) run(a trackerArgs) (string, bool) {
	switch a.Command {
	case "plan":
		if len(a.Items) == 0 || len(a.Items) > 50 {
			return "error: plan needs 1 to 50 items", true
		}
		for i, it := range a.Items {
			if strings.TrimSpace(it.Title) == "" {
				return fmt.Sprintf("error: item %d has no title", i+1), true
			}
			if it.Status == "" {
				a.Items[i].Status = "todo"
			} else if !validStatus(it.Status) {
				return fmt.Sprintf("error: item %d: status %q (want %s)", i+1, it.Status, strings.Join(planStatuses, ", ")), true
			}
		}
		t.items = append([]planItem(nil), a.Items...)
	case "update":
		if a.ID < 1 || a.ID > len(t.items) {
			return fmt.Sprintf("error: no item %d (the plan has %d)", a.ID, len(t.items)), true
		}
		if !validStatus(a.Status) {
			return fmt.Sprintf("error: status %q (want %s)", a.Status, strings.Join(planStatuses, ", ")), true
		}
		t.items[a.ID-1].Status = a.Status
	case "view":
	default:
		return fmt.Sprintf("error: unknown command %q (plan, update, view)", a.Command), true
	}
	return t.render(), false
}

func validStatus(s string) bool {
	for _, v := range planStatuses {
		if s == v {
			return true
		}
	}
	return false
}

func (t *tracker) render() string {
	if len(t.items) == 0 {
		return "no plan yet"
	}
	var b strings.Builder
	for i, it := range t.items {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, it.Status, it.Title)
	}
	return b.String()
}
