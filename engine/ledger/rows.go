package ledger

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// Row is one result row as both backends hand it over: database/sql's
// *sql.Row and *sql.Rows, pgx's Row and Rows. What a row means is decided
// here, once, so SQLite and PostgreSQL read a record the same way; each
// backend only names its columns in the order the Scan functions take them
// (its SQL differs: placeholders, casts of JSON columns to text).
type Row interface {
	Scan(dest ...any) error
}

// storedTime scans a time from either backend: SQLite's TEXT in timeLayout,
// PostgreSQL's timestamptz (pgx hands a sql.Scanner a time.Time). NULL
// leaves it invalid. Every time comes out in UTC.
type storedTime struct {
	t     time.Time
	valid bool
}

// Scan implements sql.Scanner.
func (s *storedTime) Scan(src any) error {
	var err error
	switch v := src.(type) {
	case nil:
		s.t, s.valid = time.Time{}, false
		return nil
	case time.Time:
		s.t = v.UTC()
	case string:
		s.t, err = parseTime(v)
	case []byte:
		s.t, err = parseTime(string(v))
	default:
		return fmt.Errorf("stored time: unexpected %T", src)
	}
	s.valid = err == nil
	return err
}

// ptr is the time, or nil for NULL.
func (s storedTime) ptr() *time.Time {
	if !s.valid {
		return nil
	}
	t := s.t
	return &t
}

// ScanTask reads one row of (id, repo, goal, selection, criteria, base,
// branch, status, reason, verdict, budgets, created_at, updated_at), the JSON
// columns as text.
func ScanTask(row Row) (*engine.Task, error) {
	var (
		t                engine.Task
		sel, crit        *string
		status, budgets  string
		created, updated storedTime
	)
	if err := row.Scan(&t.ID, &t.Repo, &t.Goal, &sel, &crit, &t.Base, &t.Branch, &status,
		&t.Reason, &t.Verdict, &budgets, &created, &updated); err != nil {
		return nil, err
	}
	t.Status, t.CreatedAt, t.UpdatedAt = engine.TaskStatus(status), created.t, updated.t
	if sel != nil {
		t.Selection = &engine.Selection{}
		if err := json.Unmarshal([]byte(*sel), t.Selection); err != nil {
			return nil, fmt.Errorf("task %s: selection: %w", t.ID, err)
		}
	}
	if crit != nil {
		if err := json.Unmarshal([]byte(*crit), &t.Criteria); err != nil {
			return nil, fmt.Errorf("task %s: criteria: %w", t.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(budgets), &t.Budgets); err != nil {
		return nil, fmt.Errorf("task %s: budgets: %w", t.ID, err)
	}
	return &t, nil
}

// TaskValues are the values of goal..updated_at (ScanTask's columns after
// id and repo) in the order both backends' CreateTask and UpdateTask write them;
// at stores a time as the backend does (SQLite: text, PostgreSQL: as is).
func TaskValues(t *engine.Task, at func(time.Time) any) ([]any, error) {
	var sel, crit any
	if t.Selection != nil {
		b, err := json.Marshal(t.Selection)
		if err != nil {
			return nil, err
		}
		sel = string(b)
	}
	if len(t.Criteria) > 0 {
		b, err := json.Marshal(t.Criteria)
		if err != nil {
			return nil, err
		}
		crit = string(b)
	}
	budgets, err := json.Marshal(t.Budgets)
	if err != nil {
		return nil, err
	}
	return []any{t.Goal, sel, crit, t.Base, t.Branch, string(t.Status), t.Reason, t.Verdict,
		string(budgets), at(t.CreatedAt), at(t.UpdatedAt)}, nil
}

// ScanAttempt reads one row of (id, task_id, number, fence, status, verdict,
// note, started_at, finished_at).
func ScanAttempt(row Row) (engine.Attempt, error) {
	var (
		a                 engine.Attempt
		status            string
		started, finished storedTime
	)
	if err := row.Scan(&a.ID, &a.TaskID, &a.Number, &a.Fence, &status, &a.Verdict, &a.Note, &started, &finished); err != nil {
		return a, err
	}
	a.Status, a.StartedAt, a.FinishedAt = engine.AttemptStatus(status), started.t, finished.ptr()
	return a, nil
}

// ScanEvent reads one row of (seq, task_id, attempt, fence, kind, data, at),
// data as text.
func ScanEvent(row Row) (engine.Event, error) {
	var (
		e              engine.Event
		attempt, fence sql.NullInt64
		data           *string
		at             storedTime
	)
	if err := row.Scan(&e.Seq, &e.TaskID, &attempt, &fence, &e.Kind, &data, &at); err != nil {
		return e, err
	}
	e.Attempt, e.Fence, e.Data, e.At = attempt.Int64, fence.Int64, StoredJSON(data), at.t
	return e, nil
}

// ScanVerification reads one row of (id, task_id, attempt, repo, base, head,
// verdict, report, duration_ms, at), report as text.
func ScanVerification(row Row) (engine.VerificationRun, error) {
	var (
		v       engine.VerificationRun
		task    sql.NullString
		attempt sql.NullInt64
		report  *string
		at      storedTime
	)
	if err := row.Scan(&v.ID, &task, &attempt, &v.Repo, &v.Base, &v.Head, &v.Verdict, &report, &v.DurationMS, &at); err != nil {
		return v, err
	}
	v.TaskID, v.Attempt, v.Report, v.At = task.String, attempt.Int64, StoredJSON(report), at.t
	return v, nil
}

// ScanModelCall reads one row of (id, task_id, attempt, endpoint, model,
// prompt_tokens, completion_tokens, duration_ms, timings, error, at), timings
// as text.
func ScanModelCall(row Row) (engine.ModelCall, error) {
	var (
		c       engine.ModelCall
		attempt sql.NullInt64
		timings *string
		at      storedTime
	)
	if err := row.Scan(&c.ID, &c.TaskID, &attempt, &c.Endpoint, &c.Model, &c.PromptTokens, &c.CompletionTokens,
		&c.DurationMS, &timings, &c.Error, &at); err != nil {
		return c, err
	}
	c.Attempt, c.Timings, c.At = attempt.Int64, StoredJSON(timings), at.t
	return c, nil
}

// StoredJSON is a JSON column's text as a raw message: NULL and "" are nil.
func StoredJSON(s *string) json.RawMessage {
	if s == nil || *s == "" {
		return nil
	}
	return json.RawMessage(*s)
}

// ScanAll reads every row of rows with scan; the caller closes rows
// (pgx's Rows.Close returns nothing, database/sql's an error).
func ScanAll[T any](rows interface {
	Row
	Next() bool
	Err() error
}, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ScanClaim reads one row of (seq, at, kind, task_id, payload,
// payload_digest, prev_hash, hash), payload as text. A time that does not
// read as one (a row edited by hand) comes out as the zero time, so the
// chain check names the entry rather than the read failing.
func ScanClaim(row Row) (engine.Claim, error) {
	var (
		c       engine.Claim
		at      any
		payload string
	)
	if err := row.Scan(&c.Seq, &at, &c.Kind, &c.TaskID, &payload, &c.PayloadDigest, &c.Prev, &c.Hash); err != nil {
		return c, err
	}
	var t storedTime
	if t.Scan(at) == nil {
		c.At = t.t
	}
	c.Payload = json.RawMessage(payload)
	return c, nil
}
