package gateway

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/bcode-dev/bcode/verify/secrets"
)

// HostPath is a host directory the model must not learn, and the word it
// sees instead. Placeholders are written as shell variables ($WORKTREE,
// $HOME) that the agent's terminal defines, so a command the model writes
// with one still works inside the container.
type HostPath struct {
	Path        string
	Placeholder string
}

// Redactor cleans text before it leaves the host: secrets gitleaks' rules
// find, the task's canaries, secret values from the host's environment,
// host paths, invisible Unicode (every format character: tag characters,
// bidi controls, zero-width characters, word joiners) and terminal escape
// sequences. Known values and paths are found however the agent wrote
// them: case-changed, spaced out or folded across lines, reversed, in
// fullwidth or look-alike letters, in base64 at any offset or hex (see
// secrets.NewScannerKnown); a canary's random core on its own.
//
// Scanning runs at about 1–2 MB/s, so each distinct text is redacted once
// and the result cached by its SHA-256: a conversation resent on every
// turn costs only its new messages.
type Redactor struct {
	paths []HostPath
	// OnLearn, when set, is called with each secret a scan finds that the
	// redactor did not know (a key gitleaks' rules matched), after it is
	// added to the known values: the task's store keeps it for the
	// attempts after this one. It must not call the Redactor.
	OnLearn func(values []string)

	mu      sync.Mutex
	scanner *secrets.Scanner
	known   []string // the values the scanner finds besides the rules
	hidden  []string // host paths the scanner finds encoded
	learned map[string]bool
	cache   map[[32]byte]redacted
	// spans caches findCached's results by the text's SHA-256.
	spans map[[32]byte][]secrets.Span
	// Scanned counts the bytes actually scanned (cache misses), for tests
	// and for the cost of a session.
	scanned int64
}

type redacted struct {
	text    string
	changes int
}

// maxCache bounds the cache; past it the cache starts over (a session
// rarely holds more distinct messages than this).
const maxCache = 8192

// NewRedactor builds a redactor that also removes each of known (canaries,
// secret values from the environment, secrets earlier attempts of the task
// found; values shorter than secrets.MinExtraLen are ignored) and replaces
// each host path.
func NewRedactor(known []string, paths []HostPath) (*Redactor, error) {
	var ps []HostPath
	for _, p := range paths {
		clean := filepath.Clean(p.Path)
		if p.Path == "" || clean == "/" || clean == "." {
			continue
		}
		ps = append(ps, HostPath{Path: clean, Placeholder: p.Placeholder})
		// The same directory reached through a symbolic link (/tmp on
		// macOS, a linked home) is the same secret.
		if real, err := filepath.EvalSymlinks(clean); err == nil && real != clean {
			ps = append(ps, HostPath{Path: real, Placeholder: p.Placeholder})
		}
	}
	// Longest first, so /home/u/repo wins over /home/u.
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].Path) > len(ps[j].Path) })
	// Plain occurrences of a path become its placeholder (below); the
	// scanner finds the rest: the path encoded or disguised.
	var hidden []string
	for _, p := range ps {
		hidden = append(hidden, p.Path)
	}
	r := &Redactor{paths: ps, known: slices.Clone(known), hidden: hidden, learned: map[string]bool{}, cache: map[[32]byte]redacted{}}
	for _, v := range known {
		r.learned[v] = true
	}
	s, err := secrets.NewScannerKnown(secrets.Known{Values: r.known, Paths: hidden})
	if err != nil {
		return nil, fmt.Errorf("gateway: building the secret scanner: %w", err)
	}
	r.scanner = s
	return r, nil
}

// Known returns the values the redactor finds besides gitleaks' rules:
// those it was built with and those it has learned since.
func (r *Redactor) Known() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.known)
}

// learn adds the secrets of spans that the redactor did not know to its
// known values, so every later text finds them however they are written,
// and reports them to OnLearn.
func (r *Redactor) learn(spans []secrets.Span) {
	var fresh []string
	r.mu.Lock()
	for _, sp := range spans {
		if len(sp.Secret) >= secrets.MinExtraLen && !r.learned[sp.Secret] {
			r.learned[sp.Secret] = true
			fresh = append(fresh, sp.Secret)
		}
	}
	if len(fresh) == 0 {
		r.mu.Unlock()
		return
	}
	r.known = append(r.known, fresh...)
	if s, err := secrets.NewScannerKnown(secrets.Known{Values: r.known, Paths: r.hidden}); err == nil {
		r.scanner = s
		r.cache = map[[32]byte]redacted{} // what was clean may hold a learned value
		r.spans = nil
	}
	onLearn := r.OnLearn
	r.mu.Unlock()
	if onLearn != nil {
		onLearn(fresh)
	}
}

// find scans text with the current scanner and learns what it found.
func (r *Redactor) find(text string) []secrets.Span {
	r.mu.Lock()
	s := r.scanner
	r.scanned += int64(len(text))
	r.mu.Unlock()
	spans := s.Find(text)
	r.learn(spans)
	return spans
}

// findCached is find, remembered by text: the parts of a conversation
// are resent on every model call.
func (r *Redactor) findCached(text string) []secrets.Span {
	key := sha256.Sum256([]byte(text))
	r.mu.Lock()
	c, ok := r.spans[key]
	r.mu.Unlock()
	if ok {
		return slices.Clone(c)
	}
	spans := r.find(text)
	r.mu.Lock()
	if r.spans == nil || len(r.spans) >= maxCache {
		r.spans = map[[32]byte][]secrets.Span{}
	}
	r.spans[key] = slices.Clone(spans)
	r.mu.Unlock()
	return spans
}

// replacePaths replaces the plain occurrences of the host paths with their
// placeholders.
func (r *Redactor) replacePaths(text string) (string, int) {
	out, n := text, 0
	for _, p := range r.paths {
		if k := strings.Count(out, p.Path); k > 0 {
			out = strings.ReplaceAll(out, p.Path, p.Placeholder)
			n += k
		}
	}
	return out, n
}

// Redact returns text cleaned, and how many things were removed.
func (r *Redactor) Redact(text string) (string, int) {
	if text == "" {
		return "", 0
	}
	key := sha256.Sum256([]byte(text))
	r.mu.Lock()
	if c, ok := r.cache[key]; ok {
		r.mu.Unlock()
		return c.text, c.changes
	}
	r.mu.Unlock()

	// Placeholders first, so the scanner sees only the paths that were
	// not written plainly.
	out, n := r.replacePaths(text)
	spans := r.find(out)
	out = replaceSpans(out, spans)
	out, k := secrets.StripInvisible(out)
	n += len(mergedCount(spans)) + k

	r.mu.Lock()
	if len(r.cache) >= maxCache {
		r.cache = map[[32]byte]redacted{}
	}
	r.cache[key] = redacted{out, n}
	r.mu.Unlock()
	return out, n
}

// mergedCount is spans with overlapping ones merged (what Redact counts
// as one change each).
func mergedCount(spans []secrets.Span) []secrets.Span {
	sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
	var out []secrets.Span
	for _, sp := range spans {
		if n := len(out); n > 0 && sp.Start < out[n-1].End {
			out[n-1].End = max(out[n-1].End, sp.End)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Scanned reports how many bytes were scanned (cache hits cost nothing).
func (r *Redactor) Scanned() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.scanned
}

// secretNameParts mark an environment variable whose value is a secret.
var secretNameParts = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE", "DSN"}

// SecretsFromEnv returns the values of environ's variables ("K=v") whose
// names say they hold a secret (…_TOKEN, …_API_KEY, PASSWORD…), for
// NewRedactor. Values shorter than secrets.MinExtraLen are left out: they
// would redact ordinary words.
func SecretsFromEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(v) < secrets.MinExtraLen {
			continue
		}
		up := strings.ToUpper(k)
		for _, part := range secretNameParts {
			if strings.Contains(up, part) {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// StateHostPaths are bcode's state directory and ledger file, which every
// session hides too (as $BCODE_STATE): the ledger holds every task's
// conversation. Either may be empty.
func StateHostPaths(stateDir, ledgerPath string) []HostPath {
	var ps []HostPath
	if stateDir != "" {
		ps = append(ps, HostPath{stateDir, "$BCODE_STATE"})
	}
	if ledgerPath != "" {
		ps = append(ps, HostPath{ledgerPath, "$BCODE_STATE/" + filepath.Base(ledgerPath)})
	}
	return ps
}

// DefaultHostPaths are the host paths every session hides: the worktree
// and the user's checkout (as $WORKTREE), the home directory ($HOME), and
// the temporary directory.
func DefaultHostPaths(worktree, repo string) []HostPath {
	var ps []HostPath
	if worktree != "" {
		ps = append(ps, HostPath{worktree, "$WORKTREE"})
	}
	if repo != "" {
		ps = append(ps, HostPath{repo, "$WORKTREE"})
	}
	if home, err := os.UserHomeDir(); err == nil {
		ps = append(ps, HostPath{home, "$HOME"})
	}
	if dir := os.TempDir(); dir != "" && dir != "/tmp" {
		ps = append(ps, HostPath{dir, "$TMPDIR"})
	}
	return ps
}
