package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bcode-dev/bcode/engine"
)

// SetEndpointLimit implements Store.
func (l *Ledger) SetEndpointLimit(ctx context.Context, endpoint string, limit int) error {
	if err := CheckEndpoint("SetEndpointLimit", endpoint); err != nil {
		return err
	}
	return l.Write(ctx, func(tx *sql.Tx) error {
		if limit <= 0 {
			_, err := tx.ExecContext(ctx, `DELETE FROM endpoints WHERE endpoint = ?`, endpoint)
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO endpoints (endpoint, max_sessions) VALUES (?, ?)
			ON CONFLICT (endpoint) DO UPDATE SET max_sessions = excluded.max_sessions`, endpoint, limit)
		return err
	})
}

// liveSessions counts endpoint's slots whose lease is current and unexpired.
const liveSessions = `SELECT count(*) FROM endpoint_sessions s JOIN leases l
	ON l.task_id = s.task_id AND l.owner = s.owner AND l.fence = s.fence
	WHERE s.endpoint = ? AND l.expires > ?`

// AcquireSession implements Store.
func (l *Ledger) AcquireSession(ctx context.Context, lease engine.Lease, endpoint string) error {
	if err := CheckEndpoint("AcquireSession", endpoint); err != nil {
		return err
	}
	return l.Fenced(ctx, lease, func(tx *sql.Tx) error {
		now := formatTime(l.opts.now())
		var limit int
		err := tx.QueryRowContext(ctx, `SELECT max_sessions FROM endpoints WHERE endpoint = ?`, endpoint).Scan(&limit)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if limit > 0 {
			var held int
			if err := tx.QueryRowContext(ctx, liveSessions+` AND NOT (s.task_id = ? AND s.fence = ?)`,
				endpoint, now, lease.TaskID, lease.Fence).Scan(&held); err != nil {
				return err
			}
			if held >= limit {
				return fmt.Errorf("endpoint %s: %w (%d of %d)", endpoint, ErrEndpointBusy, held, limit)
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO endpoint_sessions (endpoint, task_id, owner, fence, since) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (endpoint, task_id) DO UPDATE SET owner = excluded.owner, fence = excluded.fence, since = excluded.since`,
			endpoint, lease.TaskID, lease.Owner, lease.Fence, now)
		return err
	})
}

// ReleaseSession implements Store. It is not fenced: a runner that was
// taken over may still give back what it held, and a slot of another fence
// is left alone.
func (l *Ledger) ReleaseSession(ctx context.Context, lease engine.Lease, endpoint string) error {
	return l.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM endpoint_sessions WHERE endpoint = ? AND task_id = ? AND owner = ? AND fence = ?`,
			endpoint, lease.TaskID, lease.Owner, lease.Fence)
		return err
	})
}

// EndpointSessions implements Store.
func (l *Ledger) EndpointSessions(ctx context.Context, endpoint string) (held, limit int, err error) {
	err = l.Read(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT max_sessions FROM endpoints WHERE endpoint = ?`, endpoint).Scan(&limit)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return tx.QueryRowContext(ctx, liveSessions, endpoint, formatTime(l.opts.now())).Scan(&held)
	})
	return held, limit, err
}
