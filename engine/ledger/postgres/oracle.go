package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
)

// SetOracle implements ledger.Store.
func (s *Store) SetOracle(ctx context.Context, lease *engine.Lease, taskID string, o *engine.Oracle) error {
	raw, err := ledger.EncodeOracle(taskID, o)
	if err != nil {
		return err
	}
	write := func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE id = $1`, taskID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("task %q: %w", taskID, engine.ErrNotFound)
		}
		var pinned bool
		err := tx.QueryRow(ctx, `SELECT pinned FROM task_oracles WHERE task_id = $1 FOR UPDATE`, taskID).Scan(&pinned)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if pinned {
			return fmt.Errorf("task %s: %w", taskID, ledger.ErrOraclePinned)
		}
		_, err = tx.Exec(ctx, `INSERT INTO task_oracles (task_id, oracle, pinned, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (task_id) DO UPDATE SET oracle = excluded.oracle, pinned = excluded.pinned, updated_at = excluded.updated_at`,
			taskID, string(raw), o.Pinned(), time.Now().UTC())
		return err
	}
	if lease != nil {
		return s.fenced(ctx, *lease, func(tx pgx.Tx, _ time.Time) error { return write(tx) })
	}
	return s.write(ctx, write)
}

// Oracle implements ledger.Store.
func (s *Store) Oracle(ctx context.Context, taskID string) (*engine.Oracle, error) {
	var raw []byte
	err := s.read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT oracle::text FROM task_oracles WHERE task_id = $1`, taskID).Scan(&raw)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ledger.DecodeOracle(taskID, raw)
}
