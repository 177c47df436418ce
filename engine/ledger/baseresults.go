package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// BaseResults is the store of untouched bases' suite results the gate
// reuses (verify.BaseResults, adapted by engine/check): one opaque value
// per key, the key being everything that decides the results (the base's
// tree, toolchains, environment, sandbox and the settings of the run).
// Both backends implement it, so every runner sharing a Postgres store
// reuses the others' base runs. The ledger never reads a value: a reader
// that cannot decode one runs the base again.
type BaseResults interface {
	// PutBaseResult stores data under key, replacing what was there, and
	// prunes the oldest rows past MaxBaseResults.
	PutBaseResult(ctx context.Context, key string, data []byte) error
	// BaseResult is the value under key and when it was stored;
	// ErrNoBaseResult when there is none.
	BaseResult(ctx context.Context, key string) ([]byte, time.Time, error)
}

// Limits of the base results' table: a value over MaxBaseResultSize is
// refused (a suite's results are kilobytes to a few megabytes), and a Put
// keeps the MaxBaseResults newest rows.
const (
	MaxBaseResultSize = 16 << 20
	MaxBaseResults    = 200
)

var (
	// ErrNoBaseResult: no results are stored under the key.
	ErrNoBaseResult = errors.New("ledger: no base results under that key")
	// ErrBaseResultTooLarge: the value is over MaxBaseResultSize.
	ErrBaseResultTooLarge = errors.New("ledger: base results over the size cap")
)

// CheckBaseResult returns an error unless key and data may be stored;
// both backends' PutBaseResult call it.
func CheckBaseResult(key string, data []byte) error {
	switch {
	case key == "" || len(key) > 256:
		return invalid("PutBaseResult: the key is empty or longer than 256 bytes")
	case len(data) > MaxBaseResultSize:
		return fmt.Errorf("PutBaseResult: %d bytes: %w", len(data), ErrBaseResultTooLarge)
	}
	return nil
}

var _ BaseResults = (*Ledger)(nil)

// PutBaseResult implements BaseResults.
func (l *Ledger) PutBaseResult(ctx context.Context, key string, data []byte) error {
	if err := CheckBaseResult(key, data); err != nil {
		return err
	}
	return l.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO base_results (key, data, stored_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET data = excluded.data, stored_at = excluded.stored_at`,
			key, data, formatTime(l.opts.now())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM base_results WHERE key NOT IN
			(SELECT key FROM base_results ORDER BY stored_at DESC, key LIMIT ?)`, MaxBaseResults)
		return err
	})
}

// BaseResult implements BaseResults.
func (l *Ledger) BaseResult(ctx context.Context, key string) ([]byte, time.Time, error) {
	var data []byte
	var at string
	err := l.Read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT data, stored_at FROM base_results WHERE key = ?`, key).Scan(&data, &at)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, time.Time{}, ErrNoBaseResult
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	t, err := parseTime(at)
	return data, t, err
}
