package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/jackc/pgx/v5"
)

// journalLock is the advisory lock key under which claims are appended:
// every runner on every machine appends through it, so the last entry one
// reads stays the last until its transaction ends, and the journal is one
// chain.
const journalLock = 0x62636a6c // "bcjl"

// AppendClaims implements ledger.Store.
func (s *Store) AppendClaims(ctx context.Context, lease *engine.Lease, ev *engine.Event, claims ...*engine.Claim) error {
	for _, c := range claims {
		if err := ledger.PrepareClaim(c); err != nil {
			return err
		}
	}
	var e engine.Event
	if ev != nil {
		if err := ledger.CheckEvent(lease, ev); err != nil {
			return err
		}
		e = *ev
		if lease != nil {
			e.Fence = lease.Fence
		}
	}
	sealed := make([]engine.Claim, len(claims))
	write := func(tx pgx.Tx, now time.Time) error {
		if ev != nil {
			e.At = now
			if !ev.At.IsZero() {
				e.At = ev.At.UTC().Truncate(time.Microsecond)
			}
			var err error
			if e.Seq, err = insertEvent(ctx, tx, &e); err != nil {
				return err
			}
		}
		return insertClaims(ctx, tx, claims, sealed, now)
	}
	var err error
	switch {
	case lease != nil:
		err = s.fenced(ctx, *lease, write)
	default:
		err = s.write(ctx, func(tx pgx.Tx) error {
			now, err := s.unfencedNow(ctx, tx, ev)
			if err != nil {
				return err
			}
			return write(tx, now)
		})
	}
	if err != nil {
		return err
	}
	if ev != nil {
		*ev = e
	}
	for i, c := range claims {
		*c = sealed[i]
	}
	return nil
}

// unfencedNow is now for an unfenced append; with an event, after locking
// its task's row as Append does.
func (s *Store) unfencedNow(ctx context.Context, tx pgx.Tx, ev *engine.Event) (time.Time, error) {
	if ev == nil {
		return s.clock(ctx, tx)
	}
	now, err := s.lockTask(ctx, tx, ev.TaskID)
	if errors.Is(err, engine.ErrNotFound) {
		return now, fmt.Errorf("event %s of task %q: %w (is there such a task?)", ev.Kind, ev.TaskID, err)
	}
	return now, err
}

// insertClaims takes the journal lock, seals copies of claims (into
// sealed, written back only once the transaction commits) after the last
// entry and inserts them.
func insertClaims(ctx context.Context, tx pgx.Tx, claims []*engine.Claim, sealed []engine.Claim, now time.Time) error {
	if len(claims) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, journalLock); err != nil {
		return err
	}
	var last *engine.Claim
	var prev engine.Claim
	err := tx.QueryRow(ctx, `SELECT seq, hash FROM claims ORDER BY seq DESC LIMIT 1`).Scan(&prev.Seq, &prev.Hash)
	switch {
	case err == nil:
		last = &prev
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	for i, c := range claims {
		sealed[i] = *c
		ledger.SealClaim(&sealed[i], last, now)
		c := &sealed[i]
		if _, err := tx.Exec(ctx, `INSERT INTO claims (seq, at, kind, task_id, payload, payload_digest, prev_hash, hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			c.Seq, c.At, string(c.Kind), c.TaskID, string(c.Payload), c.PayloadDigest, c.Prev, c.Hash); err != nil {
			return err
		}
		last = c
	}
	return nil
}

// Claims implements ledger.Store.
func (s *Store) Claims(ctx context.Context, afterSeq int64, limit int) ([]engine.Claim, error) {
	q := `SELECT seq, at, kind, task_id, payload, payload_digest, prev_hash, hash FROM claims WHERE seq > $1 ORDER BY seq`
	args := []any{afterSeq}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	var out []engine.Claim
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = ledger.ScanAll(rows, ledger.ScanClaim)
		return err
	})
	return out, err
}
