package ledger

import (
	"context"
	"database/sql"

	"github.com/bcode-dev/bcode/engine"
	sqlite3 "modernc.org/sqlite/lib"
)

const sqliteConstraint = sqlite3.SQLITE_CONSTRAINT

// RecordVerification stores one gate run and returns its id (also written
// into v.ID; a zero At becomes now); a task's run also appends its verdict
// claim to the journal (VerdictClaim), in the same transaction. It is not fenced: `bcode check` runs
// outside any task, and a runner's own check is tied to its task by TaskID.
func (l *Ledger) RecordVerification(ctx context.Context, v *engine.VerificationRun) (int64, error) {
	if err := CheckVerification(v); err != nil {
		return 0, err
	}
	report, err := jsonText("verification report", v.Report)
	if err != nil {
		return 0, err
	}
	if v.At.IsZero() {
		v.At = l.opts.now()
	}
	v.At = v.At.UTC()
	var id int64
	err = l.Write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO verification_runs
			(task_id, attempt, repo, base, head, verdict, report, duration_ms, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			nullString(v.TaskID), nullInt(v.Attempt), v.Repo, v.Base, v.Head, v.Verdict, report, v.DurationMS,
			formatTime(v.At)).Scan(&id); err != nil || v.TaskID == "" {
			return err
		}
		// A task's verdict is a claim: journalled with the run.
		run := *v
		run.ID = id
		c := VerdictClaim(&run)
		if err := PrepareClaim(c); err != nil {
			return err
		}
		return l.insertClaims(ctx, tx, []*engine.Claim{c}, make([]engine.Claim, 1))
	})
	if err != nil {
		return 0, err
	}
	v.ID = id
	return id, nil
}

// Verifications returns the gate runs of one repo ("" for all), newest
// first, at most limit of them (limit <= 0: all).
func (l *Ledger) Verifications(ctx context.Context, repo string, limit int) ([]engine.VerificationRun, error) {
	if repo == "" {
		return l.verifications(ctx, "", nil, limit)
	}
	return l.verifications(ctx, ` WHERE repo = ?`, []any{repo}, limit)
}

// TaskVerifications returns the gate runs of one task, newest first, at
// most limit of them (limit <= 0: all), read through
// verification_runs_by_task rather than by filtering its repository's.
func (l *Ledger) TaskVerifications(ctx context.Context, taskID string, limit int) ([]engine.VerificationRun, error) {
	return l.verifications(ctx, ` WHERE task_id = ?`, []any{taskID}, limit)
}

// verifications reads the runs that where (with args) selects, newest
// first, at most limit when limit > 0.
func (l *Ledger) verifications(ctx context.Context, where string, args []any, limit int) ([]engine.VerificationRun, error) {
	var out []engine.VerificationRun
	err := l.Read(ctx, func(tx *sql.Tx) error {
		q := `SELECT id, task_id, attempt, repo, base, head, verdict, report, duration_ms, at FROM verification_runs` + where
		// id, not at: ids follow commit order, and clocks can step back.
		q += ` ORDER BY id DESC`
		if limit > 0 {
			q += ` LIMIT ?`
			args = append(args, limit)
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = ScanAll(rows, ScanVerification)
		return err
	})
	return out, err
}

// RecordModelCall stores one call through the gateway, fenced by the
// task's lease, and returns its id (also written into c.ID; an empty TaskID
// becomes the lease's, a zero At now).
func (l *Ledger) RecordModelCall(ctx context.Context, lease engine.Lease, c *engine.ModelCall) (int64, error) {
	if err := PrepareModelCall(lease, c); err != nil {
		return 0, err
	}
	timings, err := jsonText("model call timings", c.Timings)
	if err != nil {
		return 0, err
	}
	if c.At.IsZero() {
		c.At = l.opts.now()
	}
	c.At = c.At.UTC()
	var id int64
	err = l.Fenced(ctx, lease, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO model_calls
			(task_id, attempt, endpoint, model, prompt_tokens, completion_tokens, duration_ms, timings, error, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			c.TaskID, nullInt(c.Attempt), c.Endpoint, c.Model, c.PromptTokens, c.CompletionTokens, c.DurationMS,
			timings, c.Error, formatTime(c.At)).Scan(&id)
	})
	if err != nil {
		return 0, err
	}
	c.ID = id
	return id, nil
}

// ModelCalls returns the task's model calls in the order they were recorded.
func (l *Ledger) ModelCalls(ctx context.Context, taskID string) ([]engine.ModelCall, error) {
	var out []engine.ModelCall
	err := l.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, task_id, attempt, endpoint, model, prompt_tokens, completion_tokens,
			duration_ms, timings, error, at FROM model_calls WHERE task_id = ? ORDER BY id`, taskID)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = ScanAll(rows, ScanModelCall)
		return err
	})
	return out, err
}
