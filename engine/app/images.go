package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/bcode-dev/bcode/engine/ledger"
)

// SandboxImage is the record of a sandbox image bcode built.
type SandboxImage = ledger.SandboxImage

// ErrNoImageRecords: the ledger that keeps the sandbox images' records
// could not be opened.
var ErrNoImageRecords = errors.New("app: the sandbox images' records cannot be opened")

// openImages opens the SQLite ledger file of the state directory with the
// sandbox images' table. The images live in this machine's Docker engine,
// so their records are this machine's too: the local file even when the
// task ledger is a shared one, on a handle of its own for one operation.
func (e *Engine) openImages(ctx context.Context) (*ledger.Ledger, error) {
	p, err := e.ledgerPath()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoImageRecords, err)
	}
	l, err := ledger.Open(ctx, p, ledger.WithSandboxImages())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoImageRecords, err)
	}
	return l, nil
}

// RecordSandboxImage records that bcode built img (bcode sandbox build),
// and returns the ledger file it is recorded in.
func (e *Engine) RecordSandboxImage(ctx context.Context, img SandboxImage) (string, error) {
	l, err := e.openImages(ctx)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Path(), l.RecordSandboxImage(ctx, img)
}

// LastSandboxImage is the newest record of the image bcode built under
// ref; false when there is none. ErrNoImageRecords when the records
// cannot be opened.
func (e *Engine) LastSandboxImage(ctx context.Context, ref string) (SandboxImage, bool, error) {
	l, err := e.openImages(ctx)
	if err != nil {
		return SandboxImage{}, false, err
	}
	defer l.Close()
	return l.LastSandboxImage(ctx, ref)
}
