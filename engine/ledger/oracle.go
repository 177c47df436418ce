package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bcode-dev/bcode/engine"
)

// ErrOraclePinned: the task's oracle is pinned already; a pinned oracle
// is never replaced (the gate judges every attempt by the same tests).
var ErrOraclePinned = errors.New("oracle already pinned")

// EncodeOracle checks o and encodes it for storage; every backend's
// SetOracle calls it.
func EncodeOracle(taskID string, o *engine.Oracle) ([]byte, error) {
	if taskID == "" {
		return nil, invalid("SetOracle: no task id")
	}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("SetOracle: task %s: %w", taskID, err)
	}
	return json.Marshal(o)
}

// DecodeOracle reads a stored oracle.
func DecodeOracle(taskID string, raw []byte) (*engine.Oracle, error) {
	var o engine.Oracle
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("task %s: oracle: %w", taskID, err)
	}
	return &o, nil
}

// SetOracle implements Store: it stores taskID's oracle, fenced by lease
// when one is given, and refuses to replace a pinned one.
func (l *Ledger) SetOracle(ctx context.Context, lease *engine.Lease, taskID string, o *engine.Oracle) error {
	raw, err := EncodeOracle(taskID, o)
	if err != nil {
		return err
	}
	write := func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tasks WHERE id = ?`, taskID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("task %q: %w", taskID, engine.ErrNotFound)
		}
		var pinned int
		err := tx.QueryRowContext(ctx, `SELECT pinned FROM task_oracles WHERE task_id = ?`, taskID).Scan(&pinned)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if pinned != 0 {
			return fmt.Errorf("task %s: %w", taskID, ErrOraclePinned)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO task_oracles (task_id, oracle, pinned, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (task_id) DO UPDATE SET oracle = excluded.oracle, pinned = excluded.pinned, updated_at = excluded.updated_at`,
			taskID, string(raw), o.Pinned(), formatTime(l.opts.now()))
		return err
	}
	if lease != nil {
		return l.Fenced(ctx, *lease, write)
	}
	return l.Write(ctx, write)
}

// Oracle implements Store: taskID's oracle, or nil when it has none.
func (l *Ledger) Oracle(ctx context.Context, taskID string) (*engine.Oracle, error) {
	var raw string
	err := l.Read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT oracle FROM task_oracles WHERE task_id = ?`, taskID).Scan(&raw)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeOracle(taskID, []byte(raw))
}
