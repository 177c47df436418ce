package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

var knownStatuses = map[engine.TaskStatus]bool{
	engine.TaskQueued: true, engine.TaskRunning: true, engine.TaskVerified: true,
	engine.TaskBlocked: true, engine.TaskCancelled: true, engine.TaskAccepted: true,
	engine.TaskRejected: true, engine.TaskFailed: true, engine.TaskNotReproducible: true,
}

// idEncoding gives IDs a person can type: lower case, no padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewTaskID returns a fresh random task ID (10 characters of [a-z2-7]).
func NewTaskID() string {
	var b [6]byte
	rand.Read(b[:])
	return idEncoding.EncodeToString(b[:])
}

// CreateTask stores a new task and appends its task.created event in the
// same transaction. Empty fields get defaults, written back into t: ID a new
// random one, Status queued, Branch bcode/<id>, CreatedAt and UpdatedAt now.
func (l *Ledger) CreateTask(ctx context.Context, t *engine.Task) error {
	if err := PrepareNewTask(t, l.opts.now()); err != nil {
		return err
	}
	cols, err := TaskValues(t, storeTime)
	if err != nil {
		return fmt.Errorf("CreateTask: %w", err)
	}
	created, err := json.Marshal(map[string]any{"goal": t.Goal, "repo": t.Repo, "base": t.Base, "branch": t.Branch})
	if err != nil {
		return err
	}
	var oracle []byte
	if t.Reproduce != nil {
		if oracle, err = EncodeOracle(t.ID, t.Reproduce); err != nil {
			return err
		}
	}
	return l.Write(ctx, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tasks WHERE id = ?`, t.ID).Scan(&exists); err != nil {
			return err
		}
		if exists > 0 {
			return fmt.Errorf("CreateTask: a task with id %q already exists", t.ID)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tasks
			(id, repo, goal, selection, criteria, base, branch, status, reason, verdict, budgets, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append([]any{t.ID, t.Repo}, cols...)...); err != nil {
			return fmt.Errorf("CreateTask: %w", err)
		}
		if oracle != nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO task_oracles (task_id, oracle, pinned, updated_at) VALUES (?, ?, ?, ?)`,
				t.ID, string(oracle), t.Reproduce.Pinned(), formatTime(t.CreatedAt)); err != nil {
				return fmt.Errorf("CreateTask: its oracle: %w", err)
			}
		}
		_, err := insertEvent(ctx, tx, &engine.Event{TaskID: t.ID, Kind: engine.EventCreated, Data: created, At: t.CreatedAt})
		return err
	})
}

// PrepareNewTask checks a task about to be created and fills in its
// defaults (see CreateTask); every backend's CreateTask calls it.
func PrepareNewTask(t *engine.Task, now time.Time) error {
	if t == nil {
		return invalid("CreateTask: task is nil")
	}
	if strings.TrimSpace(t.Goal) == "" {
		return invalid("CreateTask: the task has no goal")
	}
	if t.Repo == "" {
		return invalid("CreateTask: the task has no repo")
	}
	if t.Status == "" {
		t.Status = engine.TaskQueued
	}
	if !knownStatuses[t.Status] {
		return invalid("CreateTask: unknown task status %q", t.Status)
	}
	if t.ID == "" {
		t.ID = NewTaskID()
	}
	if t.Branch == "" {
		t.Branch = "bcode/" + t.ID
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	t.CreatedAt = t.CreatedAt.UTC()
	t.UpdatedAt = t.CreatedAt
	return nil
}

// CheckUpdate checks a task about to be written by UpdateTask under lease.
func CheckUpdate(lease engine.Lease, t *engine.Task) error {
	if t == nil {
		return invalid("UpdateTask: task is nil")
	}
	if t.ID != lease.TaskID {
		return invalid("UpdateTask: task %q is not the leased task %q", t.ID, lease.TaskID)
	}
	if !knownStatuses[t.Status] {
		return invalid("UpdateTask: unknown task status %q", t.Status)
	}
	if strings.TrimSpace(t.Goal) == "" {
		return invalid("UpdateTask: the task has no goal")
	}
	return nil
}

const taskSelect = `SELECT id, repo, goal, selection, criteria, base, branch, status, reason, verdict, budgets, created_at, updated_at FROM tasks`

// Task returns the task with this id, or an error wrapping engine.ErrNotFound.
func (l *Ledger) Task(ctx context.Context, id string) (*engine.Task, error) {
	var t *engine.Task
	err := l.Read(ctx, func(tx *sql.Tx) error {
		var err error
		t, err = ScanTask(tx.QueryRowContext(ctx, taskSelect+` WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %q: %w", id, engine.ErrNotFound)
		}
		return err
	})
	return t, err
}

// Tasks returns the tasks of one repo ("" for all), newest first.
func (l *Ledger) Tasks(ctx context.Context, repo string) ([]engine.Task, error) {
	var out []engine.Task
	err := l.Read(ctx, func(tx *sql.Tx) error {
		q, args := taskSelect, []any{}
		if repo != "" {
			q += ` WHERE repo = ?`
			args = append(args, repo)
		}
		rows, err := tx.QueryContext(ctx, q+` ORDER BY created_at DESC, rowid DESC`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := ScanTask(rows)
			if err != nil {
				return err
			}
			out = append(out, *t)
		}
		return rows.Err()
	})
	return out, err
}

// UpdateTask writes every field of t but ID, Repo and CreatedAt, fenced by
// lease (which must be t's). UpdatedAt is set to now and written back.
func (l *Ledger) UpdateTask(ctx context.Context, lease engine.Lease, t *engine.Task) error {
	if err := CheckUpdate(lease, t); err != nil {
		return err
	}
	updated := *t
	updated.UpdatedAt = l.opts.now().UTC()
	cols, err := TaskValues(&updated, storeTime)
	if err != nil {
		return fmt.Errorf("UpdateTask: %w", err)
	}
	// created_at (cols[9]) is not rewritten.
	cols = append(cols[:9], cols[10], t.ID)
	err = l.Fenced(ctx, lease, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE tasks SET goal = ?, selection = ?, criteria = ?, base = ?,
			branch = ?, status = ?, reason = ?, verdict = ?, budgets = ?, updated_at = ? WHERE id = ?`, cols...)
		return err
	})
	if err == nil {
		t.UpdatedAt = updated.UpdatedAt
	}
	return err
}
