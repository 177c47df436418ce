package codegraph

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/bcode-dev/bcode/engine/ledger"
)

// Store keeps indexed units between runs.
type Store interface {
	// Load returns the stored units of repo (an absolute path) by directory.
	Load(ctx context.Context, repo string) (map[string]*Unit, error)
	// Save replaces the given units and deletes the removed directories.
	Save(ctx context.Context, repo string, units []*Unit, removed []string) error
}

// LedgerStore keeps units in the ledger's code index, one entry per
// directory (open the ledger with ledger.WithCodeIndex()). A restart reads
// every entry back, and a changed directory rewrites only its own.
type LedgerStore struct{ Ledger *ledger.Ledger }

// Load implements Store.
func (s LedgerStore) Load(ctx context.Context, repo string) (map[string]*Unit, error) {
	entries, err := s.Ledger.CodeIndex(ctx, repo)
	if err != nil {
		return map[string]*Unit{}, err
	}
	out := make(map[string]*Unit, len(entries))
	for _, e := range entries {
		u := &Unit{}
		if err := json.Unmarshal(e.Unit, u); err != nil {
			// An entry this version cannot read is simply re-indexed.
			continue
		}
		u.Dir, u.Hash = e.Dir, e.Hash
		out[e.Dir] = u
	}
	return out, nil
}

// Save implements Store.
func (s LedgerStore) Save(ctx context.Context, repo string, units []*Unit, removed []string) error {
	entries := make([]ledger.CodeIndexEntry, 0, len(units))
	for _, u := range units {
		data, err := json.Marshal(u)
		if err != nil {
			return fmt.Errorf("encoding unit %s: %w", u.Dir, err)
		}
		entries = append(entries, ledger.CodeIndexEntry{Dir: u.Dir, Hash: u.Hash, Unit: data})
	}
	return s.Ledger.SaveCodeIndex(ctx, repo, entries, removed)
}

// MemoryStore keeps units in memory: for a long-running process that
// wants no database, and for tests of the indexer itself. It holds the
// units themselves, not an encoding of them (a unit is never changed once
// indexed: Index makes a new one for a changed directory), so a re-index
// after an edit decodes nothing and the units' memory is the graph's. It
// also keeps the files' hashes and the last graph of each repository
// (warm.go), so an Index of an unchanged tree returns that graph after the
// walk.
type MemoryStore struct {
	units  map[string]map[string]*Unit
	files  map[string]*fileSums
	graphs map[string]keptGraph
	mu     sync.Mutex // guards files and graphs
}

func (m *MemoryStore) sums(repo string) *fileSums {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]*fileSums{}
	}
	if m.files[repo] == nil {
		m.files[repo] = &fileSums{}
	}
	return m.files[repo]
}

func (m *MemoryStore) kept(repo, key string) (keptGraph, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.graphs[repo]
	return k, ok && k.key == key && k.g != nil
}

func (m *MemoryStore) keep(repo string, k keptGraph) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.graphs == nil {
		m.graphs = map[string]keptGraph{}
	}
	m.graphs[repo] = k
}

// Load implements Store.
func (m *MemoryStore) Load(_ context.Context, repo string) (map[string]*Unit, error) {
	out := make(map[string]*Unit, len(m.units[repo]))
	for dir, u := range m.units[repo] {
		out[dir] = u
	}
	return out, nil
}

// Save implements Store.
func (m *MemoryStore) Save(_ context.Context, repo string, units []*Unit, removed []string) error {
	if m.units == nil {
		m.units = map[string]map[string]*Unit{}
	}
	if m.units[repo] == nil {
		m.units[repo] = map[string]*Unit{}
	}
	for _, d := range removed {
		delete(m.units[repo], d)
	}
	for _, u := range units {
		m.units[repo][u.Dir] = u
	}
	return nil
}
