package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// StartAttempt implements ledger.Store.
func (s *Store) StartAttempt(ctx context.Context, lease engine.Lease, taskID string) (*engine.Attempt, error) {
	if err := ledger.CheckLeasedTask("StartAttempt", lease, taskID); err != nil {
		return nil, err
	}
	var a *engine.Attempt
	err := s.fenced(ctx, lease, func(tx pgx.Tx, now time.Time) error {
		a = &engine.Attempt{TaskID: taskID, Fence: lease.Fence, Status: engine.AttemptRunning, StartedAt: now}
		return tx.QueryRow(ctx, `INSERT INTO attempts (task_id, number, fence, status, started_at)
			VALUES ($1, (SELECT COALESCE(max(number), 0) + 1 FROM attempts WHERE task_id = $1), $2, $3, $4)
			RETURNING id, number`, taskID, a.Fence, string(a.Status), now).Scan(&a.ID, &a.Number)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// FinishAttempt implements ledger.Store.
func (s *Store) FinishAttempt(ctx context.Context, lease engine.Lease, a *engine.Attempt) error {
	status, err := ledger.FinishStatus(lease, a)
	if err != nil {
		return err
	}
	var finished time.Time
	err = s.fenced(ctx, lease, func(tx pgx.Tx, now time.Time) error {
		finished = now
		if a.FinishedAt != nil {
			finished = a.FinishedAt.UTC().Truncate(time.Microsecond)
		}
		var (
			fence int64
			was   string
		)
		err := tx.QueryRow(ctx, `SELECT fence, status FROM attempts WHERE id = $1 AND task_id = $2`, a.ID, a.TaskID).Scan(&fence, &was)
		if errors.Is(err, pgx.ErrNoRows) {
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
		_, err = tx.Exec(ctx, `UPDATE attempts SET status = $1, verdict = $2, note = $3, finished_at = $4 WHERE id = $5`,
			string(status), a.Verdict, a.Note, finished, a.ID)
		return err
	})
	if err != nil {
		return err
	}
	a.Status, a.FinishedAt = status, &finished
	return nil
}

const attemptColumns = `id, task_id, number, fence, status, verdict, note, started_at, finished_at`

func scanAttempts(rows pgx.Rows) ([]engine.Attempt, error) {
	defer rows.Close()
	return ledger.ScanAll(rows, ledger.ScanAttempt)
}

// Attempts implements ledger.Store.
func (s *Store) Attempts(ctx context.Context, taskID string) ([]engine.Attempt, error) {
	var out []engine.Attempt
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE task_id = $1 ORDER BY number`, taskID)
		if err != nil {
			return err
		}
		out, err = scanAttempts(rows)
		return err
	})
	return out, err
}

// InterruptOrphans implements ledger.Store.
func (s *Store) InterruptOrphans(ctx context.Context, lease engine.Lease, taskID string) ([]engine.Attempt, error) {
	if err := ledger.CheckLeasedTask("InterruptOrphans", lease, taskID); err != nil {
		return nil, err
	}
	var out []engine.Attempt
	err := s.fenced(ctx, lease, func(tx pgx.Tx, now time.Time) error {
		rows, err := tx.Query(ctx, `UPDATE attempts SET status = $1, finished_at = $2
			WHERE task_id = $3 AND status = $4 AND fence < $5 RETURNING `+attemptColumns,
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
	slices.SortFunc(out, func(a, b engine.Attempt) int { return a.Number - b.Number })
	return out, nil
}

// Append implements ledger.Store. Unfenced appends (a user's command) lock
// the task's row too, so a task's events commit in seq order.
func (s *Store) Append(ctx context.Context, lease *engine.Lease, e *engine.Event) (int64, error) {
	if err := ledger.CheckEvent(lease, e); err != nil {
		return 0, err
	}
	ev := *e
	if lease != nil {
		ev.Fence = lease.Fence
	}
	write := func(tx pgx.Tx, now time.Time) error {
		if e.At.IsZero() {
			ev.At = now
		} else {
			ev.At = e.At.UTC().Truncate(time.Microsecond)
		}
		var err error
		ev.Seq, err = insertEvent(ctx, tx, &ev)
		return err
	}
	var err error
	if lease != nil {
		err = s.fenced(ctx, *lease, write)
	} else {
		err = s.write(ctx, func(tx pgx.Tx) error {
			now, err := s.lockTask(ctx, tx, e.TaskID)
			if errors.Is(err, engine.ErrNotFound) {
				return fmt.Errorf("event %s of task %q: %w (is there such a task?)", e.Kind, e.TaskID, err)
			}
			if err != nil {
				return err
			}
			return write(tx, now)
		})
	}
	if err != nil {
		return 0, err
	}
	*e = ev
	return ev.Seq, nil
}

func nullInt(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullString(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func jsonArg(what string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if err := ledger.CheckJSON(what, raw); err != nil {
		return nil, err
	}
	return string(raw), nil
}

func insertEvent(ctx context.Context, tx pgx.Tx, e *engine.Event) (int64, error) {
	data, err := jsonArg("event data", e.Data)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = tx.QueryRow(ctx, `INSERT INTO events (task_id, attempt, fence, kind, data, at)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq`,
		e.TaskID, nullInt(e.Attempt), nullInt(e.Fence), e.Kind, data, e.At).Scan(&seq)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" {
		return 0, fmt.Errorf("event %s of task %q: %w (is there such a task?)", e.Kind, e.TaskID, err)
	}
	return seq, err
}

// Events implements ledger.Store. A task's events commit in seq order (its
// row lock); across tasks a smaller seq may commit after a larger one, so a
// follower of every task's events should re-read a little behind its last seq.
func (s *Store) Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error) {
	var out []engine.Event
	err := s.read(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = queryEvents(ctx, tx, taskID, afterSeq, limit, false)
		return err
	})
	return out, err
}

// LatestEvents implements ledger.Store.
func (s *Store) LatestEvents(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, int, error) {
	if err := ledger.CheckLatestLimit(limit); err != nil {
		return nil, 0, err
	}
	var (
		out   []engine.Event
		total int
	)
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM events WHERE task_id = $1 AND seq > $2`, taskID, afterSeq).Scan(&total); err != nil {
			return err
		}
		var err error
		out, err = queryEvents(ctx, tx, taskID, afterSeq, limit, true)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	slices.Reverse(out)
	return out, max(total-len(out), 0), nil
}

func queryEvents(ctx context.Context, tx pgx.Tx, taskID string, afterSeq int64, limit int, newest bool) ([]engine.Event, error) {
	q := `SELECT seq, task_id, attempt, fence, kind, data::text, at FROM events WHERE seq > $1`
	args := []any{afterSeq}
	if taskID != "" {
		args = append(args, taskID)
		q += fmt.Sprintf(` AND task_id = $%d`, len(args))
	}
	q += ` ORDER BY seq`
	if newest {
		q += ` DESC`
	}
	if limit > 0 {
		args = append(args, limit)
		q += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanEvents(rows)
}

// NewestEvents implements ledger.Store in one statement: for each task,
// one backward probe of events_by_task (task_id, seq), however long its log.
func (s *Store) NewestEvents(ctx context.Context, repo string) (map[string]engine.Event, error) {
	q := newestEventsQuery
	var args []any
	if repo != "" {
		q += ` WHERE t.repo = $1`
		args = append(args, repo)
	}
	var evs []engine.Event
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		evs, err = scanEvents(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]engine.Event, len(evs))
	for _, e := range evs {
		out[e.TaskID] = e
	}
	return out, nil
}

// SumEvents implements ledger.Store. A JSON number counts when its text
// is an integer that fits in a bigint, as Go's int takes it; the nested
// CASEs order the tests, so no cast ever sees other text.
func (s *Store) SumEvents(ctx context.Context, taskID string, kind engine.EventKind, field string) (int, int64, error) {
	if err := ledger.CheckSumField(field); err != nil {
		return 0, 0, err
	}
	const q = `SELECT count(*), COALESCE(sum(v), 0)::bigint FROM (
		SELECT CASE WHEN json_typeof(data -> $1::text) = 'number' THEN
				CASE WHEN (data ->> $1::text) ~ '^-?[0-9]{1,19}$' THEN
					CASE WHEN (data ->> $1::text)::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
					THEN (data ->> $1::text)::bigint END END END AS v,
			COALESCE(json_typeof(data -> $1::text), 'null') AS t
		FROM events WHERE task_id = $2 AND kind = $3 AND json_typeof(data) IN ('object', 'null')
	) r WHERE t = 'null' OR v IS NOT NULL`
	var (
		n   int
		sum int64
	)
	err := s.read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, q, field, taskID, string(kind)).Scan(&n, &sum)
	})
	return n, sum, err
}

// newestEventsQuery is each task's newest event (NewestEvents; a WHERE on
// t.repo may follow).
const newestEventsQuery = `SELECT e.seq, e.task_id, e.attempt, e.fence, e.kind, e.data::text, e.at
		FROM tasks t CROSS JOIN LATERAL (
			SELECT * FROM events WHERE task_id = t.id ORDER BY seq DESC LIMIT 1
		) e`

// scanEvents reads rows of ledger.ScanEvent's columns and closes them.
func scanEvents(rows pgx.Rows) ([]engine.Event, error) {
	defer rows.Close()
	return ledger.ScanAll(rows, ledger.ScanEvent)
}

// RecordVerification implements ledger.Store (not fenced).
func (s *Store) RecordVerification(ctx context.Context, v *engine.VerificationRun) (int64, error) {
	if err := ledger.CheckVerification(v); err != nil {
		return 0, err
	}
	report, err := jsonArg("verification report", v.Report)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.write(ctx, func(tx pgx.Tx) error {
		if v.At.IsZero() {
			now, err := s.clock(ctx, tx)
			if err != nil {
				return err
			}
			v.At = now
		}
		v.At = v.At.UTC().Truncate(time.Microsecond)
		if err := tx.QueryRow(ctx, `INSERT INTO verification_runs
			(task_id, attempt, repo, base, head, verdict, report, duration_ms, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			nullString(v.TaskID), nullInt(v.Attempt), v.Repo, v.Base, v.Head, v.Verdict, report, v.DurationMS, v.At).Scan(&id); err != nil || v.TaskID == "" {
			return err
		}
		return recordVerdict(ctx, s, tx, v, id)
	})
	if err != nil {
		return 0, err
	}
	v.ID = id
	return id, nil
}

// Verifications implements ledger.Store: newest first.
func (s *Store) Verifications(ctx context.Context, repo string, limit int) ([]engine.VerificationRun, error) {
	if repo == "" {
		return s.verifications(ctx, "", nil, limit)
	}
	return s.verifications(ctx, ` WHERE repo = $1`, []any{repo}, limit)
}

// TaskVerifications implements ledger.Store: newest first, through
// verification_runs_by_task.
func (s *Store) TaskVerifications(ctx context.Context, taskID string, limit int) ([]engine.VerificationRun, error) {
	return s.verifications(ctx, ` WHERE task_id = $1`, []any{taskID}, limit)
}

// verifications reads the runs that where (with args) selects, newest
// first, at most limit when limit > 0.
func (s *Store) verifications(ctx context.Context, where string, args []any, limit int) ([]engine.VerificationRun, error) {
	var out []engine.VerificationRun
	err := s.read(ctx, func(tx pgx.Tx) error {
		q := `SELECT id, task_id, attempt, repo, base, head, verdict, report::text, duration_ms, at FROM verification_runs` + where
		q += ` ORDER BY id DESC`
		if limit > 0 {
			args = append(args, limit)
			q += fmt.Sprintf(` LIMIT $%d`, len(args))
		}
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = ledger.ScanAll(rows, ledger.ScanVerification)
		return err
	})
	return out, err
}

// RecordModelCall implements ledger.Store (fenced).
func (s *Store) RecordModelCall(ctx context.Context, lease engine.Lease, c *engine.ModelCall) (int64, error) {
	if err := ledger.PrepareModelCall(lease, c); err != nil {
		return 0, err
	}
	timings, err := jsonArg("model call timings", c.Timings)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.fenced(ctx, lease, func(tx pgx.Tx, now time.Time) error {
		if c.At.IsZero() {
			c.At = now
		}
		c.At = c.At.UTC().Truncate(time.Microsecond)
		return tx.QueryRow(ctx, `INSERT INTO model_calls
			(task_id, attempt, endpoint, model, prompt_tokens, completion_tokens, duration_ms, timings, error, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			c.TaskID, nullInt(c.Attempt), c.Endpoint, c.Model, c.PromptTokens, c.CompletionTokens, c.DurationMS,
			timings, c.Error, c.At).Scan(&id)
	})
	if err != nil {
		return 0, err
	}
	c.ID = id
	return id, nil
}

// ModelCalls implements ledger.Store.
func (s *Store) ModelCalls(ctx context.Context, taskID string) ([]engine.ModelCall, error) {
	var out []engine.ModelCall
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, task_id, attempt, endpoint, model, prompt_tokens, completion_tokens,
			duration_ms, timings::text, error, at FROM model_calls WHERE task_id = $1 ORDER BY id`, taskID)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = ledger.ScanAll(rows, ledger.ScanModelCall)
		return err
	})
	return out, err
}

// SetEndpointLimit implements ledger.Store.
func (s *Store) SetEndpointLimit(ctx context.Context, endpoint string, limit int) error {
	if err := ledger.CheckEndpoint("SetEndpointLimit", endpoint); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if limit <= 0 {
			_, err := tx.Exec(ctx, `DELETE FROM endpoints WHERE endpoint = $1`, endpoint)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO endpoints (endpoint, max_sessions) VALUES ($1, $2)
			ON CONFLICT (endpoint) DO UPDATE SET max_sessions = excluded.max_sessions`, endpoint, limit)
		return err
	})
}

const liveSessions = `SELECT count(*) FROM endpoint_sessions s JOIN leases l
	ON l.task_id = s.task_id AND l.owner = s.owner AND l.fence = s.fence
	WHERE s.endpoint = $1 AND l.expires > $2`

// AcquireSession implements ledger.Store. The endpoint's row is locked
// while the slots are counted, so two runners cannot both take the last one.
func (s *Store) AcquireSession(ctx context.Context, lease engine.Lease, endpoint string) error {
	if err := ledger.CheckEndpoint("AcquireSession", endpoint); err != nil {
		return err
	}
	return s.fenced(ctx, lease, func(tx pgx.Tx, now time.Time) error {
		var limit int
		err := tx.QueryRow(ctx, `SELECT max_sessions FROM endpoints WHERE endpoint = $1 FOR UPDATE`, endpoint).Scan(&limit)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if limit > 0 {
			var held int
			if err := tx.QueryRow(ctx, liveSessions+` AND NOT (s.task_id = $3 AND s.fence = $4)`,
				endpoint, now, lease.TaskID, lease.Fence).Scan(&held); err != nil {
				return err
			}
			if held >= limit {
				return fmt.Errorf("endpoint %s: %w (%d of %d)", endpoint, ledger.ErrEndpointBusy, held, limit)
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO endpoint_sessions (endpoint, task_id, owner, fence, since) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (endpoint, task_id) DO UPDATE SET owner = excluded.owner, fence = excluded.fence, since = excluded.since`,
			endpoint, lease.TaskID, lease.Owner, lease.Fence, now)
		return err
	})
}

// ReleaseSession implements ledger.Store.
func (s *Store) ReleaseSession(ctx context.Context, lease engine.Lease, endpoint string) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM endpoint_sessions WHERE endpoint = $1 AND task_id = $2 AND owner = $3 AND fence = $4`,
			endpoint, lease.TaskID, lease.Owner, lease.Fence)
		return err
	})
}

// EndpointSessions implements ledger.Store.
func (s *Store) EndpointSessions(ctx context.Context, endpoint string) (held, limit int, err error) {
	err = s.read(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT max_sessions FROM endpoints WHERE endpoint = $1`, endpoint).Scan(&limit)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		now := time.Now()
		if s.now != nil {
			now = s.now()
		} else if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
			return err
		}
		return tx.QueryRow(ctx, liveSessions, endpoint, now).Scan(&held)
	})
	return held, limit, err
}

// recordVerdict journals a task's gate run (ledger.VerdictClaim), in the
// transaction that records it.
func recordVerdict(ctx context.Context, s *Store, tx pgx.Tx, v *engine.VerificationRun, id int64) error {
	run := *v
	run.ID = id
	c := ledger.VerdictClaim(&run)
	if err := ledger.PrepareClaim(c); err != nil {
		return err
	}
	now, err := s.clock(ctx, tx)
	if err != nil {
		return err
	}
	return insertClaims(ctx, tx, []*engine.Claim{c}, make([]engine.Claim, 1), now)
}
