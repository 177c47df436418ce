package ledger

import (
	"context"
	"database/sql"
	"errors"

	"github.com/bcode-dev/bcode/engine"
)

// AppendClaims implements Store.AppendClaims. The one writer connection and
// BEGIN IMMEDIATE serialise appends across handles and processes: the last
// entry read here is the last there is until this transaction ends.
func (l *Ledger) AppendClaims(ctx context.Context, lease *engine.Lease, ev *engine.Event, claims ...*engine.Claim) error {
	for _, c := range claims {
		if err := PrepareClaim(c); err != nil {
			return err
		}
	}
	var e engine.Event
	if ev != nil {
		if err := CheckEvent(lease, ev); err != nil {
			return err
		}
		e = *ev
		if e.At.IsZero() {
			e.At = l.opts.now()
		}
		e.At = e.At.UTC()
		if lease != nil {
			e.Fence = lease.Fence
		}
	}
	sealed := make([]engine.Claim, len(claims))
	write := func(tx *sql.Tx) error {
		if ev != nil {
			var err error
			if e.Seq, err = insertEvent(ctx, tx, &e); err != nil {
				return err
			}
		}
		return l.insertClaims(ctx, tx, claims, sealed)
	}
	var err error
	if lease != nil {
		err = l.Fenced(ctx, *lease, write)
	} else {
		err = l.Write(ctx, write)
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

// insertClaims seals copies of claims (into sealed, written back only
// once the transaction commits) after the journal's last entry and
// inserts them.
func (l *Ledger) insertClaims(ctx context.Context, tx *sql.Tx, claims []*engine.Claim, sealed []engine.Claim) error {
	var last *engine.Claim
	var prev engine.Claim
	err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM claims ORDER BY seq DESC LIMIT 1`).Scan(&prev.Seq, &prev.Hash)
	switch {
	case err == nil:
		last = &prev
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	at := l.opts.now()
	for i, c := range claims {
		sealed[i] = *c
		SealClaim(&sealed[i], last, at)
		s := &sealed[i]
		if _, err := tx.ExecContext(ctx, `INSERT INTO claims (seq, at, kind, task_id, payload, payload_digest, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			s.Seq, s.At.Format(claimTimeLayout), string(s.Kind), s.TaskID, string(s.Payload), s.PayloadDigest, s.Prev, s.Hash); err != nil {
			return err
		}
		last = s
	}
	return nil
}

// Claims implements Store.Claims.
func (l *Ledger) Claims(ctx context.Context, afterSeq int64, limit int) ([]engine.Claim, error) {
	q := `SELECT seq, at, kind, task_id, payload, payload_digest, prev_hash, hash FROM claims WHERE seq > ? ORDER BY seq`
	args := []any{afterSeq}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	var out []engine.Claim
	err := l.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = ScanAll(rows, ScanClaim)
		return err
	})
	return out, err
}
