package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/bcode-dev/bcode/engine"
)

// StartAttempt opens the task's next attempt (number = the largest so far +
// 1) as running under the lease's fence.
func (l *Ledger) StartAttempt(ctx context.Context, lease engine.Lease, taskID string) (*engine.Attempt, error) {
	if err := CheckLeasedTask("StartAttempt", lease, taskID); err != nil {
		return nil, err
	}
	a := &engine.Attempt{TaskID: taskID, Fence: lease.Fence, Status: engine.AttemptRunning, StartedAt: l.opts.now().UTC()}
	err := l.Fenced(ctx, lease, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO attempts (task_id, number, fence, status, started_at)
			VALUES (?, (SELECT COALESCE(MAX(number), 0) + 1 FROM attempts WHERE task_id = ?), ?, ?, ?)
			RETURNING id, number`,
			taskID, taskID, a.Fence, string(a.Status), formatTime(a.StartedAt)).Scan(&a.ID, &a.Number)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// FinishAttempt closes a running attempt of the leased task with a.Status
// (finished if empty or running; interrupted is allowed), a.Verdict and
// a.Note; a nil FinishedAt becomes now. Only the holder whose fence the
// attempt ran under may finish it: attempts left by an earlier holder are
// closed by InterruptOrphans. The stored values are written back into a.
func (l *Ledger) FinishAttempt(ctx context.Context, lease engine.Lease, a *engine.Attempt) error {
	status, err := FinishStatus(lease, a)
	if err != nil {
		return err
	}
	finished := l.opts.now().UTC()
	if a.FinishedAt != nil {
		finished = a.FinishedAt.UTC()
	}
	err = l.Fenced(ctx, lease, func(tx *sql.Tx) error {
		var (
			fence int64
			was   string
		)
		err := tx.QueryRowContext(ctx, `SELECT fence, status FROM attempts WHERE id = ? AND task_id = ?`, a.ID, a.TaskID).Scan(&fence, &was)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("attempt %d of task %q: %w", a.ID, a.TaskID, engine.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if fence != lease.Fence {
			return fmt.Errorf("FinishAttempt: attempt %d of task %s ran under fence %d, not this lease's %d (close it with InterruptOrphans)",
				a.ID, a.TaskID, fence, lease.Fence)
		}
		if was != string(engine.AttemptRunning) {
			return fmt.Errorf("FinishAttempt: attempt %d of task %s is already %s", a.ID, a.TaskID, was)
		}
		_, err = tx.ExecContext(ctx, `UPDATE attempts SET status = ?, verdict = ?, note = ?, finished_at = ? WHERE id = ?`,
			string(status), a.Verdict, a.Note, formatTime(finished), a.ID)
		return err
	})
	if err != nil {
		return err
	}
	a.Status, a.FinishedAt = status, &finished
	return nil
}

const attemptSelect = `SELECT id, task_id, number, fence, status, verdict, note, started_at, finished_at FROM attempts`

// scanAttempts reads rows of ScanAttempt's columns and closes them.
func scanAttempts(rows *sql.Rows) ([]engine.Attempt, error) {
	defer rows.Close()
	return ScanAll(rows, ScanAttempt)
}

// Attempts returns the task's attempts in order of number.
func (l *Ledger) Attempts(ctx context.Context, taskID string) ([]engine.Attempt, error) {
	var out []engine.Attempt
	err := l.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, attemptSelect+` WHERE task_id = ? ORDER BY number`, taskID)
		if err != nil {
			return err
		}
		out, err = scanAttempts(rows)
		return err
	})
	return out, err
}

// InterruptOrphans closes as interrupted every attempt of the task still
// marked running under an older fence than lease's (its runner died or was
// taken over), and returns them as they now are. A new holder calls it right
// after Acquire, before starting its own attempt.
func (l *Ledger) InterruptOrphans(ctx context.Context, lease engine.Lease, taskID string) ([]engine.Attempt, error) {
	if err := CheckLeasedTask("InterruptOrphans", lease, taskID); err != nil {
		return nil, err
	}
	now := formatTime(l.opts.now())
	var out []engine.Attempt
	err := l.Fenced(ctx, lease, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE attempts SET status = ?, finished_at = ?
			WHERE task_id = ? AND status = ? AND fence < ?
			RETURNING id, task_id, number, fence, status, verdict, note, started_at, finished_at`,
			string(engine.AttemptInterrupted), now, taskID, string(engine.AttemptRunning), lease.Fence)
		if err != nil {
			return err
		}
		out, err = scanAttempts(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	// RETURNING rows come in no promised order.
	slices.SortFunc(out, func(a, b engine.Attempt) int { return a.Number - b.Number })
	return out, nil
}
