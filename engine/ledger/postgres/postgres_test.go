package postgres_test

import (
	"context"
	"fmt"
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

// BenchmarkClaim: tasks claimed per second and ClaimNext latency with 1, 4
// and 16 runners on one PostgreSQL (see ledgertest.BenchClaims). Run with
// a fixed count: go test -run '^$' -bench Claim -benchtime 2000x.
func BenchmarkClaim(b *testing.B) {
	for _, runners := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("runners=%d", runners), func(b *testing.B) {
			url := pgtest.URL(b)
			ledgertest.BenchClaims(b, func() ledger.Store {
				s, err := postgres.Open(context.Background(), url)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				return s
			}, runners)
		})
	}
}
