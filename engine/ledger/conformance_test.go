package ledger_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/ledger/ledgertest"
)

// TestConformance runs the Store conformance suite against SQLite files:
// every handle a test opens is another connection to the same file, as
// another bcode process would open it.
func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) func(ledgertest.Options) ledger.Store {
		path := filepath.Join(t.TempDir(), "ledger.db")
		return func(o ledgertest.Options) ledger.Store {
			var opts []ledger.Option
			if o.Now != nil {
				opts = append(opts, ledger.WithClock(o.Now))
			}
			if o.Alive != nil {
				opts = append(opts, ledger.WithAlive(o.Alive))
			}
			l, err := ledger.Open(context.Background(), path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return l
		}
	})
}

// BenchmarkClaim: the SQLite ledger with one runner (see
// ledgertest.BenchClaims), to set beside the Postgres numbers.
func BenchmarkClaim(b *testing.B) {
	path := filepath.Join(b.TempDir(), "ledger.db")
	ledgertest.BenchClaims(b, func() ledger.Store {
		l, err := ledger.Open(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}, 1)
}
