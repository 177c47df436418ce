package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/bcode-dev/bcode/engine"
)

// Append adds an event to its task's log and returns its seq, which is
// ledger-wide and strictly increasing (AUTOINCREMENT never reuses a seq, not
// even that of a deleted last row). With a lease the append is fenced and
// the event carries the lease's fence; with nil (a user's command, which
// holds no lease) it is not. Seq, Fence and a zero At are written back into e.
// When Append returns nil the event is on disk (synchronous=FULL).
func (l *Ledger) Append(ctx context.Context, lease *engine.Lease, e *engine.Event) (int64, error) {
	if err := CheckEvent(lease, e); err != nil {
		return 0, err
	}
	ev := *e
	if ev.At.IsZero() {
		ev.At = l.opts.now()
	}
	ev.At = ev.At.UTC()
	if lease != nil {
		ev.Fence = lease.Fence
	}
	var seq int64
	write := func(tx *sql.Tx) error {
		var err error
		seq, err = insertEvent(ctx, tx, &ev)
		return err
	}
	var err error
	if lease != nil {
		err = l.Fenced(ctx, *lease, write)
	} else {
		err = l.Write(ctx, write)
	}
	if err != nil {
		return 0, err
	}
	ev.Seq = seq
	*e = ev
	return seq, nil
}

func insertEvent(ctx context.Context, tx *sql.Tx, e *engine.Event) (int64, error) {
	data, err := jsonText("event data", e.Data)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = tx.QueryRowContext(ctx, `INSERT INTO events (task_id, attempt, fence, kind, data, at)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING seq`,
		e.TaskID, nullInt(e.Attempt), nullInt(e.Fence), e.Kind, data, formatTime(e.At)).Scan(&seq)
	if err != nil {
		if sqliteCode(err) == sqliteConstraint {
			return 0, fmt.Errorf("event %s of task %q: %w (is there such a task?)", e.Kind, e.TaskID, err)
		}
		return 0, err
	}
	return seq, nil
}

// Events returns the task's events ("" for every task's) with seq > afterSeq,
// in seq order, at most limit of them (limit <= 0: all). A follower passes
// the last seq it saw.
func (l *Ledger) Events(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, error) {
	var out []engine.Event
	err := l.Read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = queryEvents(ctx, tx, taskID, afterSeq, limit, false)
		return err
	})
	return out, err
}

// LatestEvents returns the newest limit events (limit > 0) of taskID after
// afterSeq, oldest first, and how many older ones after afterSeq it left
// out: what an editor shows as "the last N events", read in one
// transaction so the count and the page agree.
func (l *Ledger) LatestEvents(ctx context.Context, taskID string, afterSeq int64, limit int) ([]engine.Event, int, error) {
	if err := CheckLatestLimit(limit); err != nil {
		return nil, 0, err
	}
	var (
		out   []engine.Event
		total int
	)
	err := l.Read(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE task_id = ? AND seq > ?`, taskID, afterSeq).Scan(&total); err != nil {
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

// queryEvents reads events after afterSeq (of taskID unless ""), by seq,
// newest first when newest is set, at most limit when limit > 0.
func queryEvents(ctx context.Context, tx *sql.Tx, taskID string, afterSeq int64, limit int, newest bool) ([]engine.Event, error) {
	q := `SELECT seq, task_id, attempt, fence, kind, data, at FROM events WHERE seq > ?`
	args := []any{afterSeq}
	if taskID != "" {
		q += ` AND task_id = ?`
		args = append(args, taskID)
	}
	q += ` ORDER BY seq`
	if newest {
		q += ` DESC`
	}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanEvents(rows)
}

// NewestEvents returns the newest event of each task of repo ("": every
// task) that has one, by task id: what a list of tasks shows beside each,
// read in one statement however many tasks there are. The correlated
// max(seq) is one probe of events_by_task (task_id, seq) per task.
func (l *Ledger) NewestEvents(ctx context.Context, repo string) (map[string]engine.Event, error) {
	q := `SELECT e.seq, e.task_id, e.attempt, e.fence, e.kind, e.data, e.at
		FROM tasks t JOIN events e ON e.seq = (SELECT max(seq) FROM events WHERE task_id = t.id)`
	var args []any
	if repo != "" {
		q += ` WHERE t.repo = ?`
		args = append(args, repo)
	}
	var evs []engine.Event
	err := l.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
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

// SumEvents implements Store.SumEvents in one aggregate over the task's
// rows of events_by_task: nothing but two numbers leaves the database.
func (l *Ledger) SumEvents(ctx context.Context, taskID string, kind engine.EventKind, field string) (int, int64, error) {
	if err := CheckSumField(field); err != nil {
		return 0, 0, err
	}
	// json_type says 'integer' for any JSON integer literal; one too big
	// for 64 bits (too big for Go's int) extracts as a real.
	const q = `SELECT count(*), COALESCE(sum(json_extract(data, ?1)), 0) FROM events
		WHERE task_id = ?2 AND kind = ?3 AND json_type(data) IN ('object', 'null')
			AND (json_type(data, ?1) IS NULL OR json_type(data, ?1) = 'null'
				OR (json_type(data, ?1) = 'integer' AND typeof(json_extract(data, ?1)) = 'integer'))`
	var (
		n   int
		sum int64
	)
	err := l.Read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, q, "$."+field, taskID, string(kind)).Scan(&n, &sum)
	})
	return n, sum, err
}

// scanEvents reads rows of ScanEvent's columns and closes them.
func scanEvents(rows *sql.Rows) ([]engine.Event, error) {
	defer rows.Close()
	return ScanAll(rows, ScanEvent)
}
