package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// CreateTask implements ledger.Store.
func (s *Store) CreateTask(ctx context.Context, t *engine.Task) error {
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	if err := ledger.PrepareNewTask(t, now()); err != nil {
		return err
	}
	created, err := json.Marshal(map[string]any{"goal": t.Goal, "repo": t.Repo, "base": t.Base, "branch": t.Branch})
	if err != nil {
		return err
	}
	var oracle []byte
	if t.Reproduce != nil {
		if oracle, err = ledger.EncodeOracle(t.ID, t.Reproduce); err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		t.CreatedAt = t.CreatedAt.Truncate(time.Microsecond)
		t.UpdatedAt = t.CreatedAt
		cols, err := ledger.TaskValues(t, storeTime)
		if err != nil {
			return fmt.Errorf("CreateTask: %w", err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO tasks
			(id, repo, goal, selection, criteria, base, branch, status, reason, verdict, budgets, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING`,
			append([]any{t.ID, t.Repo}, cols...)...)
		if err != nil {
			return fmt.Errorf("CreateTask: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("CreateTask: a task with id %q already exists", t.ID)
		}
		if oracle != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO task_oracles (task_id, oracle, pinned, updated_at) VALUES ($1, $2, $3, $4)`,
				t.ID, string(oracle), t.Reproduce.Pinned(), t.CreatedAt); err != nil {
				return fmt.Errorf("CreateTask: its oracle: %w", err)
			}
		}
		_, err = insertEvent(ctx, tx, &engine.Event{TaskID: t.ID, Kind: engine.EventCreated, Data: created, At: t.CreatedAt})
		return err
	})
}

const taskSelect = `SELECT id, repo, goal, selection::text, criteria::text, base, branch, status, reason, verdict,
	budgets::text, created_at, updated_at FROM tasks`

// Task implements ledger.Store.
func (s *Store) Task(ctx context.Context, id string) (*engine.Task, error) {
	var t *engine.Task
	err := s.read(ctx, func(tx pgx.Tx) error {
		var err error
		t, err = ledger.ScanTask(tx.QueryRow(ctx, taskSelect+` WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("task %q: %w", id, engine.ErrNotFound)
		}
		return err
	})
	return t, err
}

// Tasks implements ledger.Store: newest first.
func (s *Store) Tasks(ctx context.Context, repo string) ([]engine.Task, error) {
	var out []engine.Task
	err := s.read(ctx, func(tx pgx.Tx) error {
		q, args := taskSelect, []any{}
		if repo != "" {
			q += ` WHERE repo = $1`
			args = append(args, repo)
		}
		rows, err := tx.Query(ctx, q+` ORDER BY created_at DESC, seq DESC`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := ledger.ScanTask(rows)
			if err != nil {
				return err
			}
			out = append(out, *t)
		}
		return rows.Err()
	})
	return out, err
}

// UpdateTask implements ledger.Store.
func (s *Store) UpdateTask(ctx context.Context, lease engine.Lease, t *engine.Task) error {
	if err := ledger.CheckUpdate(lease, t); err != nil {
		return err
	}
	var when time.Time
	err := s.fenced(ctx, lease, func(tx pgx.Tx, now time.Time) error {
		updated := *t
		updated.UpdatedAt = now
		cols, err := ledger.TaskValues(&updated, storeTime)
		if err != nil {
			return fmt.Errorf("UpdateTask: %w", err)
		}
		cols = append(cols[:9], cols[10], t.ID)
		_, err = tx.Exec(ctx, `UPDATE tasks SET goal = $1, selection = $2, criteria = $3, base = $4,
			branch = $5, status = $6, reason = $7, verdict = $8, budgets = $9, updated_at = $10 WHERE id = $11`, cols...)
		when = now
		return err
	})
	if err == nil {
		t.UpdatedAt = when
	}
	return err
}

func readLease(ctx context.Context, tx pgx.Tx, taskID string) (*ledger.HeldLease, error) {
	var (
		r  ledger.HeldLease
		st int64
	)
	err := tx.QueryRow(ctx, `SELECT task_id, owner, host, pid, boot_id, start_time, fence, heartbeat, expires
		FROM leases WHERE task_id = $1`, taskID).Scan(
		&r.TaskID, &r.Owner, &r.Host, &r.PID, &r.BootID, &st, &r.Fence, &r.Heartbeat, &r.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.StartTime = uint64(st)
	r.Heartbeat, r.Expires = r.Heartbeat.UTC(), r.Expires.UTC()
	return &r, nil
}

// Acquire implements ledger.Store (see ledger.Ledger.Acquire). It waits for
// the task's row lock: a claim or a write of the task in flight finishes first.
func (s *Store) Acquire(ctx context.Context, taskID string, holder ledger.Holder, ttl time.Duration) (engine.Lease, *engine.Lease, error) {
	if err := ledger.CheckHolder("Acquire", holder, ttl); err != nil {
		return engine.Lease{}, nil, err
	}
	var (
		got  engine.Lease
		prev *engine.Lease
	)
	err := s.write(ctx, func(tx pgx.Tx) error {
		now, err := s.lockTask(ctx, tx, taskID)
		if err != nil {
			return err
		}
		cur, err := readLease(ctx, tx, taskID)
		if err != nil {
			return err
		}
		if cur != nil && !ledger.TakeOver(*cur, holder, now, s.alive) {
			return fmt.Errorf("task %s: %w: %s (pid %d) until %s, fence %d", taskID, engine.ErrLeaseHeld,
				cur.Owner, cur.PID, cur.Expires.Local().Format(time.RFC3339), cur.Fence)
		}
		got, prev, err = take(ctx, tx, taskID, cur, holder, now, ttl)
		return err
	})
	if err != nil {
		return engine.Lease{}, nil, err
	}
	return got, prev, nil
}

// take writes holder's lease with the task's next fence over cur.
func take(ctx context.Context, tx pgx.Tx, taskID string, cur *ledger.HeldLease, holder ledger.Holder, now time.Time, ttl time.Duration) (engine.Lease, *engine.Lease, error) {
	var prev *engine.Lease
	if cur != nil {
		p := cur.Lease
		prev = &p
	}
	var fence int64
	if err := tx.QueryRow(ctx, `INSERT INTO fences (task_id, fence) VALUES ($1, 1)
		ON CONFLICT (task_id) DO UPDATE SET fence = fences.fence + 1 RETURNING fence`, taskID).Scan(&fence); err != nil {
		return engine.Lease{}, nil, err
	}
	exp := now.Add(ttl).Truncate(time.Microsecond)
	got := engine.Lease{TaskID: taskID, Owner: holder.Owner, PID: holder.PID, BootID: holder.BootID,
		Fence: fence, Heartbeat: now, Expires: exp}
	_, err := tx.Exec(ctx, `INSERT INTO leases (task_id, owner, host, pid, boot_id, start_time, fence, heartbeat, expires)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (task_id) DO UPDATE SET owner = excluded.owner, host = excluded.host, pid = excluded.pid,
			boot_id = excluded.boot_id, start_time = excluded.start_time, fence = excluded.fence,
			heartbeat = excluded.heartbeat, expires = excluded.expires`,
		taskID, holder.Owner, holder.Host, holder.PID, holder.BootID, int64(holder.StartTime), fence, now, exp)
	if err != nil {
		return engine.Lease{}, nil, err
	}
	return got, prev, nil
}

// ClaimNext implements ledger.Store: FOR NO KEY UPDATE SKIP LOCKED over the
// runnable tasks, oldest first, so claimers never wait on one another and
// never get the same task. A candidate whose holder is alive on this
// machine stays locked (and skipped by others) until this transaction ends.
func (s *Store) ClaimNext(ctx context.Context, holder ledger.Holder, ttl time.Duration) (engine.Lease, *engine.Lease, error) {
	if err := ledger.CheckHolder("ClaimNext", holder, ttl); err != nil {
		return engine.Lease{}, nil, err
	}
	var (
		got  engine.Lease
		prev *engine.Lease
	)
	err := s.write(ctx, func(tx pgx.Tx) error {
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		passed := []string{}
		for range 64 {
			var id string
			err := tx.QueryRow(ctx, `SELECT t.id FROM tasks t LEFT JOIN leases l ON l.task_id = t.id
				WHERE t.status IN ('queued', 'running') AND t.id <> ALL($1)
					AND (l.task_id IS NULL OR l.expires <= $2 OR (l.boot_id = $3 AND l.owner <> $4))
				ORDER BY t.created_at, t.seq LIMIT 1
				FOR NO KEY UPDATE OF t SKIP LOCKED`, passed, now, holder.BootID, holder.Owner).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return ledger.ErrNothingRunnable
			}
			if err != nil {
				return err
			}
			cur, err := readLease(ctx, tx, id)
			if err != nil {
				return err
			}
			if cur != nil && (cur.Owner == holder.Owner || !ledger.TakeOver(*cur, holder, now, s.alive)) {
				passed = append(passed, id)
				continue
			}
			got, prev, err = take(ctx, tx, id, cur, holder, now, ttl)
			return err
		}
		return ledger.ErrNothingRunnable
	})
	if err != nil {
		return engine.Lease{}, nil, err
	}
	return got, prev, nil
}

// Heartbeat implements ledger.Store.
func (s *Store) Heartbeat(ctx context.Context, lease engine.Lease, ttl time.Duration) (engine.Lease, error) {
	if err := ledger.CheckTTL("Heartbeat", ttl); err != nil {
		return engine.Lease{}, err
	}
	// Retried only while the lease is valid: a heartbeat that cannot get
	// through before then tells its runner the lease is lost.
	until := lease.Expires
	if until.IsZero() {
		until = time.Now().Add(ttl)
	}
	err := s.fencedUntil(ctx, lease, until, func(tx pgx.Tx, now time.Time) error {
		exp := now.Add(ttl).Truncate(time.Microsecond)
		_, err := tx.Exec(ctx, `UPDATE leases SET heartbeat = $1, expires = $2 WHERE task_id = $3`, now, exp, lease.TaskID)
		lease.Heartbeat, lease.Expires = now, exp
		return err
	})
	if err != nil {
		return engine.Lease{}, err
	}
	return lease, nil
}

// Release implements ledger.Store; the fence counter stays.
func (s *Store) Release(ctx context.Context, lease engine.Lease) error {
	return s.fenced(ctx, lease, func(tx pgx.Tx, _ time.Time) error {
		_, err := tx.Exec(ctx, `DELETE FROM leases WHERE task_id = $1`, lease.TaskID)
		return err
	})
}

// Lease implements ledger.Store.
func (s *Store) Lease(ctx context.Context, taskID string) (*engine.Lease, error) {
	var out *engine.Lease
	err := s.read(ctx, func(tx pgx.Tx) error {
		r, err := readLease(ctx, tx, taskID)
		if r != nil {
			out = &r.Lease
		}
		return err
	})
	return out, err
}

// storeTime is how a time goes to a timestamptz column: in UTC (the
// database keeps microseconds).
func storeTime(t time.Time) any { return t.UTC() }
