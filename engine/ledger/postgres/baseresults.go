package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bcode-dev/bcode/engine/ledger"
)

var _ ledger.BaseResults = (*Store)(nil)

// PutBaseResult implements ledger.BaseResults.
func (s *Store) PutBaseResult(ctx context.Context, key string, data []byte) error {
	if err := ledger.CheckBaseResult(key, data); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO base_results (key, data, stored_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET data = excluded.data, stored_at = excluded.stored_at`,
			key, data, now); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM base_results WHERE key NOT IN
			(SELECT key FROM base_results ORDER BY stored_at DESC, key LIMIT $1)`, ledger.MaxBaseResults)
		return err
	})
}

// BaseResult implements ledger.BaseResults.
func (s *Store) BaseResult(ctx context.Context, key string) ([]byte, time.Time, error) {
	var data []byte
	var at time.Time
	err := s.read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT data, stored_at FROM base_results WHERE key = $1`, key).Scan(&data, &at)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, time.Time{}, ledger.ErrNoBaseResult
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	return data, at.UTC(), nil
}
