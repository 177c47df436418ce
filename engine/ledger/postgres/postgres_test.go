package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/ledgertest"
	"github.com/bcode-dev/bcode/engine/ledger/postgres"
	"github.com/bcode-dev/bcode/engine/ledger/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// backend opens handles on a fresh database of a real PostgreSQL: each
// handle is its own connection pool, as another runner's would be.
func backend(t *testing.T) func(ledgertest.Options) ledger.Store {
	url := pgtest.URL(t)
	return func(o ledgertest.Options) ledger.Store {
		var opts []postgres.Option
		if o.Now != nil {
			opts = append(opts, postgres.WithClock(o.Now))
		}
		if o.Alive != nil {
			opts = append(opts, postgres.WithAlive(o.Alive))
		}
		s, err := postgres.Open(context.Background(), url, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestConformance(t *testing.T) { ledgertest.Run(t, backend) }
