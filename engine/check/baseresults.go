package check

import (
	"context"
	"time"

	"github.com/bcode-dev/bcode/verify"
)

// ledgerBaseResults is the ledger's store of base results
// (engine/ledger.BaseResults, both backends), as a Recorder may offer it.
type ledgerBaseResults interface {
	PutBaseResult(ctx context.Context, key string, data []byte) error
	BaseResult(ctx context.Context, key string) ([]byte, time.Time, error)
}

// baseResults is the store the gate keeps the base's runs in: none with
// NoCache, else Options.BaseResults, else the Recorder's when it has one.
func baseResults(o Options) verify.BaseResults {
	switch {
	case o.NoCache:
		return nil
	case o.BaseResults != nil:
		return o.BaseResults
	}
	if l, ok := o.Recorder.(ledgerBaseResults); ok {
		return ledgerStore{l}
	}
	return nil
}

// ledgerStore adapts the ledger to verify.BaseResults. Every error of the
// ledger's, its ErrNoBaseResult included, is a miss: the base runs.
type ledgerStore struct{ l ledgerBaseResults }

func (s ledgerStore) Get(ctx context.Context, key string) ([]byte, time.Time, bool, error) {
	data, at, err := s.l.BaseResult(ctx, key)
	if err != nil {
		return nil, time.Time{}, false, nil
	}
	return data, at, true, nil
}

func (s ledgerStore) Put(ctx context.Context, key string, data []byte) error {
	return s.l.PutBaseResult(ctx, key, data)
}
