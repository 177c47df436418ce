package git

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// Head is where a working tree's HEAD is: the top of the working tree and
// the commit and tree HEAD names.
type Head struct {
	Top, Commit, Tree string
}

// HeadOf resolves, in one git process (hardened as every other), the top
// of the working tree holding dir and its HEAD commit and tree: what a
// caller needs to find what it derived from that commit before (mined
// history, the base's configuration) without opening the repository,
// which takes three processes more. An error for a directory outside a
// working tree or a HEAD with no commit.
func HeadOf(ctx context.Context, dir string) (Head, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Head{}, err
	}
	if m, ok := ctx.Value(headMemoKey{}).(*headMemo); ok {
		return m.of(ctx, abs)
	}
	return headOf(ctx, abs)
}

func headOf(ctx context.Context, abs string) (Head, error) {
	out, err := run(ctx, invocation{dir: abs, args: []string{"rev-parse", "--show-toplevel", "HEAD^{commit}", "HEAD^{tree}"}})
	if err != nil {
		return Head{}, fmt.Errorf("resolving HEAD in %s: %w", abs, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 3 || lines[0] == "" || !fullID(lines[1]) || !fullID(lines[2]) {
		return Head{}, fmt.Errorf("git rev-parse in %s: unexpected output %q", abs, out)
	}
	return Head{Top: lines[0], Commit: lines[1], Tree: lines[2]}, nil
}

// fullID reports whether s is a full object name (SHA-1 or SHA-256).
func fullID(s string) bool { return (len(s) == 40 || len(s) == 64) && validID(s) }

// WithHeadMemo returns a context in which HeadOf resolves each directory
// once: the parts of one operation that each need HEAD (a pack's
// configuration and its history) then see the same commit, from one git
// process. A long-lived caller makes one per operation, never one for its
// lifetime: HEAD moves.
func WithHeadMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, headMemoKey{}, &headMemo{heads: map[string]*headCall{}})
}

type headMemoKey struct{}

type headMemo struct {
	mu    sync.Mutex
	heads map[string]*headCall // by absolute directory
}

// headCall is one directory's resolution; done is closed when head and
// err are set. A caller that arrives while it runs waits for it.
type headCall struct {
	done chan struct{}
	head Head
	err  error
}

func (m *headMemo) of(ctx context.Context, abs string) (Head, error) {
	m.mu.Lock()
	c, ok := m.heads[abs]
	if !ok {
		c = &headCall{done: make(chan struct{})}
		m.heads[abs] = c
	}
	m.mu.Unlock()
	if !ok {
		c.head, c.err = headOf(ctx, abs)
		close(c.done)
	}
	select {
	case <-c.done:
		return c.head, c.err
	case <-ctx.Done():
		return Head{}, context.Cause(ctx)
	}
}
