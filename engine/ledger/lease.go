package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

// Holder is who asks for a lease. LocalHolder fills it in for this process.
type Holder struct {
	Owner string // runner identity, e.g. host/pid/nonce; unique per runner
	// Host is the holder's host name: with BootID it decides whether
	// another holder may judge PID (containers share a boot id).
	Host   string
	PID    int
	BootID string // this machine's boot id (BootID()); "" disables the dead-pid shortcut
	// StartTime is the holder process's start time in clock ticks after
	// boot (/proc/<pid>/stat field 22), 0 if unknown. It tells a dead
	// holder from a new process that was given the same pid.
	StartTime uint64
}

func readLease(ctx context.Context, tx *sql.Tx, taskID string) (*HeldLease, error) {
	var (
		r                  HeldLease
		heartbeat, expires string
	)
	err := tx.QueryRowContext(ctx, `SELECT task_id, owner, host, pid, boot_id, start_time, fence, heartbeat, expires
		FROM leases WHERE task_id = ?`, taskID).Scan(
		&r.TaskID, &r.Owner, &r.Host, &r.PID, &r.BootID, &r.StartTime, &r.Fence, &heartbeat, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.Heartbeat, err = parseTime(heartbeat); err != nil {
		return nil, err
	}
	if r.Expires, err = parseTime(expires); err != nil {
		return nil, err
	}
	return &r, nil
}

// Acquire takes the task's lease for holder until now+ttl and returns it
// with a fence larger than any the task's lease ever had. When it took the
// lease over from another holder (expired, or dead on this machine) it also
// returns that previous lease, whose Heartbeat says when it was last seen.
//
// A live lease of another owner is refused with an error wrapping
// engine.ErrLeaseHeld that names the holder and the expiry. A lease is taken
// over when it has expired, or at once when its holder ran on this machine
// since its last boot (same boot id) and its process is gone (or its pid now
// belongs to a process started at another time). A holder with another boot
// id ran before a reboot or elsewhere: its pid says nothing, so its lease
// goes stale by TTL only. The same owner acquiring again gets a new fence.
func (l *Ledger) Acquire(ctx context.Context, taskID string, holder Holder, ttl time.Duration) (engine.Lease, *engine.Lease, error) {
	if err := CheckHolder("Acquire", holder, ttl); err != nil {
		return engine.Lease{}, nil, err
	}
	var (
		got  engine.Lease
		prev *engine.Lease
	)
	err := l.Write(ctx, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tasks WHERE id = ?`, taskID).Scan(&exists); err != nil {
			return err
		}
		if exists == 0 {
			return fmt.Errorf("task %q: %w", taskID, engine.ErrNotFound)
		}
		cur, err := readLease(ctx, tx, taskID)
		if err != nil {
			return err
		}
		now := l.opts.now().UTC()
		if cur != nil && !TakeOver(*cur, holder, now, l.opts.alive) {
			return fmt.Errorf("task %s: %w: %s (pid %d) until %s, fence %d", taskID, engine.ErrLeaseHeld,
				cur.Owner, cur.PID, cur.Expires.Local().Format(time.RFC3339), cur.Fence)
		}
		got, prev, err = l.take(ctx, tx, taskID, cur, holder, now, ttl)
		return err
	})
	if err != nil {
		return engine.Lease{}, nil, err
	}
	return got, prev, nil
}

// take writes holder's lease on taskID with the next fence, replacing cur.
func (l *Ledger) take(ctx context.Context, tx *sql.Tx, taskID string, cur *HeldLease, holder Holder, now time.Time, ttl time.Duration) (engine.Lease, *engine.Lease, error) {
	var prev *engine.Lease
	if cur != nil {
		p := cur.Lease
		prev = &p
	}
	var fence int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO fences (task_id, fence) VALUES (?, 1)
		ON CONFLICT (task_id) DO UPDATE SET fence = fence + 1 RETURNING fence`, taskID).Scan(&fence); err != nil {
		return engine.Lease{}, nil, err
	}
	got := engine.Lease{TaskID: taskID, Owner: holder.Owner, PID: holder.PID, BootID: holder.BootID,
		Fence: fence, Heartbeat: now, Expires: now.Add(ttl)}
	_, err := tx.ExecContext(ctx, `INSERT INTO leases (task_id, owner, host, pid, boot_id, start_time, fence, heartbeat, expires)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET owner = excluded.owner, host = excluded.host, pid = excluded.pid,
			boot_id = excluded.boot_id, start_time = excluded.start_time, fence = excluded.fence,
			heartbeat = excluded.heartbeat, expires = excluded.expires`,
		taskID, holder.Owner, holder.Host, holder.PID, holder.BootID, int64(holder.StartTime), fence,
		formatTime(got.Heartbeat), formatTime(got.Expires))
	if err != nil {
		return engine.Lease{}, nil, err
	}
	return got, prev, nil
}

// claimScan bounds how many runnable candidates ClaimNext looks at in one
// transaction: the ones whose holder is alive elsewhere are skipped.
const claimScan = 64

// ClaimNext implements Store. SQLite has one writer, so the BEGIN
// IMMEDIATE transaction alone keeps two runners from claiming one task.
func (l *Ledger) ClaimNext(ctx context.Context, holder Holder, ttl time.Duration) (engine.Lease, *engine.Lease, error) {
	if err := CheckHolder("ClaimNext", holder, ttl); err != nil {
		return engine.Lease{}, nil, err
	}
	var (
		got  engine.Lease
		prev *engine.Lease
	)
	err := l.Write(ctx, func(tx *sql.Tx) error {
		now := l.opts.now().UTC()
		rows, err := tx.QueryContext(ctx, `SELECT t.id FROM tasks t LEFT JOIN leases l ON l.task_id = t.id
			WHERE t.status IN (?, ?) AND (l.task_id IS NULL OR l.expires <= ? OR l.boot_id = ?)
			ORDER BY t.created_at, t.rowid LIMIT ?`,
			string(engine.TaskQueued), string(engine.TaskRunning), formatTime(now), holder.BootID, claimScan)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			cur, err := readLease(ctx, tx, id)
			if err != nil {
				return err
			}
			if cur != nil && (cur.Owner == holder.Owner || !TakeOver(*cur, holder, now, l.opts.alive)) {
				continue // its own lease is a task it is already running
			}
			got, prev, err = l.take(ctx, tx, id, cur, holder, now, ttl)
			return err
		}
		return ErrNothingRunnable
	})
	if err != nil {
		return engine.Lease{}, nil, err
	}
	return got, prev, nil
}

// Heartbeat extends the lease to now+ttl. It fails with engine.ErrFenced
// when the lease row no longer has this owner and fence (another runner
// took over, or it was released). A lease past its expiry that nobody took
// over is still this holder's, and the heartbeat renews it.
func (l *Ledger) Heartbeat(ctx context.Context, lease engine.Lease, ttl time.Duration) (engine.Lease, error) {
	if err := CheckTTL("Heartbeat", ttl); err != nil {
		return engine.Lease{}, err
	}
	err := l.Write(ctx, func(tx *sql.Tx) error {
		now := l.opts.now().UTC()
		res, err := tx.ExecContext(ctx, `UPDATE leases SET heartbeat = ?, expires = ?
			WHERE task_id = ? AND owner = ? AND fence = ?`,
			formatTime(now), formatTime(now.Add(ttl)), lease.TaskID, lease.Owner, lease.Fence)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fenced(ctx, tx, lease)
		}
		lease.Heartbeat, lease.Expires = now, now.Add(ttl)
		return nil
	})
	if err != nil {
		return engine.Lease{}, err
	}
	return lease, nil
}

// Release gives the lease up. The fence counter stays, so the next holder
// still gets a larger fence. Releasing a lease this holder no longer has
// returns engine.ErrFenced and changes nothing.
func (l *Ledger) Release(ctx context.Context, lease engine.Lease) error {
	return l.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM leases WHERE task_id = ? AND owner = ? AND fence = ?`,
			lease.TaskID, lease.Owner, lease.Fence)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fenced(ctx, tx, lease)
		}
		return nil
	})
}

// Lease returns the task's current lease row, expired or not, or nil when
// nobody holds it.
func (l *Ledger) Lease(ctx context.Context, taskID string) (*engine.Lease, error) {
	var out *engine.Lease
	err := l.Read(ctx, func(tx *sql.Tx) error {
		r, err := readLease(ctx, tx, taskID)
		if r != nil {
			out = &r.Lease
		}
		return err
	})
	return out, err
}

// Fenced runs fn in a BEGIN IMMEDIATE transaction after checking, in that
// transaction, that the task's lease row still has lease's owner and fence.
// Otherwise it returns engine.ErrFenced and fn does not run. Since the check
// and fn's writes commit together, and every acquisition bumps the fence in
// its own write transaction, a write that commits was made by the current
// holder.
func (l *Ledger) Fenced(ctx context.Context, lease engine.Lease, fn func(tx *sql.Tx) error) error {
	return l.Write(ctx, func(tx *sql.Tx) error {
		if err := checkFence(ctx, tx, lease); err != nil {
			return err
		}
		return fn(tx)
	})
}

func checkFence(ctx context.Context, tx *sql.Tx, lease engine.Lease) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM leases WHERE task_id = ? AND owner = ? AND fence = ?`,
		lease.TaskID, lease.Owner, lease.Fence).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fenced(ctx, tx, lease)
	}
	return nil
}

// fenced builds the ErrFenced error, saying who holds the lease now.
func fenced(ctx context.Context, tx *sql.Tx, lease engine.Lease) error {
	cur, err := readLease(ctx, tx, lease.TaskID)
	if err != nil {
		return err
	}
	if cur == nil {
		return fmt.Errorf("task %s, fence %d of %s: %w (the lease was released)", lease.TaskID, lease.Fence, lease.Owner, engine.ErrFenced)
	}
	return fmt.Errorf("task %s, fence %d of %s: %w (now fence %d of %s)", lease.TaskID, lease.Fence, lease.Owner,
		engine.ErrFenced, cur.Fence, cur.Owner)
}
