// Package git runs git against a repository bcode does not trust.
//
// The repository under test chooses its own .git/config, .gitattributes and
// hooks, so a plain `git` call could run any program it names: a filter
// driver's clean or smudge command, an fsmonitor hook, a textconv or external
// diff, a pager, an editor, a hook, a credential helper. Every invocation
// here goes through one function (run) that starts git with a minimal
// environment, no system or global configuration, and command-line settings
// that override every such program; and the operations bcode needs are built
// from plumbing that never reads the working tree through a filter
// (hash-object --no-filters, cat-file --batch, diff-tree, ls-tree,
// update-index --index-info).
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// Repo is one git working tree.
type Repo struct {
	Dir    string // absolute top-level directory of the working tree
	GitDir string // absolute git directory (.git, or .git/worktrees/<name> for a linked worktree)

	// objectFormat is "sha1" or "sha256"; it sets the length of the null id.
	objectFormat string
	// drivers neutralizes the filter, diff and merge drivers the repository
	// configured when it was opened (see readConfig).
	drivers []string
	// fileMode and symlinks are core.fileMode and core.symlinks: where they
	// are off, the index, not the file system, knows the executable bit
	// and which files are links.
	fileMode, symlinks bool
	// env names the git directory and working tree explicitly (GIT_DIR,
	// GIT_WORK_TREE) for a repository opened without discovery (see
	// LinkedWorktree): git then never reads the working tree's .git.
	env []string
}

// Error is a git command that failed. Its message carries git's own
// explanation (stderr).
type Error struct {
	Args     []string // the git subcommand and its arguments (without the hardening options)
	ExitCode int
	Stderr   string
	Err      error // the underlying exec error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// hardening are the command-line settings given to every git invocation.
// Command-line configuration wins over the repository's own, so these turn
// off every program a hostile .git/config could name, and every behaviour
// that would let git reach outside the repository.
var hardening = []string{
	"--no-pager",
	"--no-replace-objects",
	"--literal-pathspecs",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.splitIndex=false",
	"-c", "index.sparse=false",
	"-c", "core.pager=cat",
	"-c", "core.editor=true",
	"-c", "sequence.editor=true",
	"-c", "core.sshCommand=false",
	"-c", "core.askPass=false",
	"-c", "credential.helper=",
	"-c", "protocol.allow=never",
	"-c", "protocol.file.allow=never",
	"-c", "color.ui=false",
	"-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false",
	"-c", "log.showSignature=false",
	"-c", "submodule.recurse=false",
	// Submodules are never entered: no status, diff or summary of a
	// nested repository runs (its own config would apply there).
	"-c", "diff.ignoreSubmodules=all",
	"-c", "status.submoduleSummary=false",
	"-c", "fetch.recurseSubmodules=false",
	"-c", "push.recurseSubmodules=no",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "advice.detachedHead=false",
}

var (
	homeOnce sync.Once
	homeDir  string
	homeErr  error
)

// emptyHome is the HOME every git process gets: an empty, read-only
// directory, so no ~/.gitconfig, ~/.config/git/attributes or
// ~/.config/git/ignore of the user (or of anyone) changes what git does.
// It is one fixed directory per user, reused across runs so none is left
// behind per process, and trusted only if it is a real directory of ours
// that nobody else can write to and that is empty; otherwise a fresh one
// is made.
func emptyHome() (string, error) {
	homeOnce.Do(func() {
		uid := os.Getuid()
		fixed := filepath.Join(os.TempDir(), fmt.Sprintf("bcode-git-home-%d", uid))
		_ = os.Mkdir(fixed, 0o555)
		if trustedEmptyDir(fixed, uid) {
			homeDir = fixed
			return
		}
		d, err := scratch.MkdirTemp("bcode-git-home-*")
		if err == nil {
			err = os.Chmod(d, 0o555)
		}
		if err != nil {
			homeErr = fmt.Errorf("creating an empty HOME for git: %w", err)
			return
		}
		homeDir = d
	})
	return homeDir, homeErr
}

func trustedEmptyDir(dir string, uid int) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o222 != 0 {
		return false
	}
	if owner, ok := fileOwner(fi); !ok || owner != uid {
		return false
	}
	entries, err := sandbox.ReadDir(dir)
	return err == nil && len(entries) == 0
}

// environ is the whole environment of a git process: the caller's PATH and
// TMPDIR, and nothing else of the caller's (no GIT_DIR, GIT_INDEX_FILE,
// GIT_CONFIG_PARAMETERS, GIT_EXTERNAL_DIFF, XDG_CONFIG_HOME...).
func environ(home string, extra []string) []string {
	env := []string{
		"HOME=" + home,
		"LC_ALL=C",
		"LANG=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_EDITOR=true",
		"GIT_SEQUENCE_EDITOR=true",
		"GIT_ASKPASS=false",
		"SSH_ASKPASS=false",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_LITERAL_PATHSPECS=1",
		"GIT_PROTOCOL_FROM_USER=0",
	}
	for _, k := range []string{"PATH", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// invocation is one git process.
type invocation struct {
	dir   string
	args  []string
	stdin io.Reader
	env   []string // added to environ
	// drivers are extra "-c" pairs (see readConfig).
	drivers []string
	// stdout, when set, receives the output instead of the returned buffer.
	stdout io.Writer
	// extra are open files the process inherits as descriptors 3, 4, ...
	extra []*os.File
	// noLiteral drops --literal-pathspecs, for the commands that refuse
	// all pathspec magic (check-ignore); their callers make each path
	// start with "./" so none can be read as magic.
	noLiteral bool
}

// maxStderr bounds how much of git's stderr an error keeps.
const maxStderr = 64 << 10

// run is the single place a git process is started.
func run(ctx context.Context, inv invocation) ([]byte, error) {
	home, err := emptyHome()
	if err != nil {
		return nil, err
	}
	argv := make([]string, 0, len(hardening)+len(inv.drivers)+len(inv.args))
	for _, h := range hardening {
		if !inv.noLiteral || h != "--literal-pathspecs" {
			argv = append(argv, h)
		}
	}
	argv = append(argv, inv.drivers...)
	argv = append(argv, inv.args...)
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = inv.dir
	cmd.Env = environ(home, inv.env)
	if inv.noLiteral {
		cmd.Env = append(cmd.Env, "GIT_LITERAL_PATHSPECS=0")
	}
	scratch.Own(cmd)
	cmd.Stdin = inv.stdin
	cmd.ExtraFiles = inv.extra
	cmd.WaitDelay = 5 * time.Second
	var stdout bytes.Buffer
	if inv.stdout != nil {
		cmd.Stdout = inv.stdout
	} else {
		cmd.Stdout = &stdout
	}
	stderr := &limitedBuffer{limit: maxStderr}
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("git is not installed or not on PATH (install git): %w", err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", strings.Join(inv.args, " "), ctx.Err())
		}
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return stdout.Bytes(), &Error{Args: inv.args, ExitCode: code, Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// limitedBuffer keeps the first limit bytes written to it.
type limitedBuffer struct {
	buf   bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string { return b.buf.String() }

// Open finds the working tree that contains dir.
func Open(ctx context.Context, dir string) (*Repo, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("repository directory %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("not a git repository: %s does not exist (run bcode inside a git checkout or pass --repo)", abs)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("not a git repository: %s is not a directory (run bcode inside a git checkout or pass --repo)", abs)
	}
	out, err := run(ctx, invocation{dir: abs, args: []string{"rev-parse", "--is-bare-repository", "--absolute-git-dir", "--show-object-format"}})
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			if strings.Contains(ge.Stderr, "not a git repository") {
				return nil, fmt.Errorf("not a git repository: %s (run bcode inside a git checkout or pass --repo)", abs)
			}
			if strings.Contains(ge.Stderr, "dubious ownership") {
				return nil, fmt.Errorf("%s is owned by another user and git refuses to read it: %s (run bcode as the repository's owner)", abs, strings.TrimSpace(ge.Stderr))
			}
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 3 {
		return nil, fmt.Errorf("git rev-parse in %s: unexpected output %q", abs, out)
	}
	if lines[0] == "true" {
		return nil, fmt.Errorf("%s is a bare repository: bcode needs a working tree (run it inside a checkout or pass --repo)", abs)
	}
	top, err := run(ctx, invocation{dir: abs, args: []string{"rev-parse", "--show-toplevel"}})
	if err != nil {
		return nil, fmt.Errorf("%s is inside a git directory, not a working tree (run bcode inside a checkout or pass --repo): %w", abs, err)
	}
	r := &Repo{
		Dir:          strings.TrimRight(string(top), "\n"),
		GitDir:       lines[1],
		objectFormat: lines[2],
	}
	if r.Dir == "" {
		return nil, fmt.Errorf("%s is inside a git directory, not a working tree (run bcode inside a checkout or pass --repo)", abs)
	}
	if err := r.loadConfig(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Repo) loadConfig(ctx context.Context) error {
	cfg, err := readConfig(ctx, r.Dir, r.env)
	if err != nil {
		return err
	}
	r.drivers, r.fileMode, r.symlinks = cfg.drivers, cfg.fileMode, cfg.symlinks
	return nil
}

// repoConfig is what bcode needs from the repository's own configuration.
type repoConfig struct {
	drivers            []string // "-c" settings that neutralize its drivers
	fileMode, symlinks bool
}

// readConfig reads, in one git process, the repository's filter, diff and
// merge drivers and core.fileMode and core.symlinks.
//
// A driver is named by .gitattributes and defined in .git/config, so its
// names are only known by asking. The "-c" settings returned empty each of
// them: a filter with an empty clean, smudge and process command is no
// filter at all, a textconv of "cat" shows the blob as it is, and a merge
// driver of "false" reports a conflict instead of running anything. An
// external diff (diff.external or a driver's command) becomes "false":
// porcelain `git diff` then fails loudly unless the caller passes
// --no-ext-diff, rather than print a diff the repository chose.
func readConfig(ctx context.Context, dir string, env []string) (repoConfig, error) {
	cfg := repoConfig{fileMode: true, symlinks: true}
	out, err := run(ctx, invocation{dir: dir, env: env, args: []string{"config", "--null", "--get-regexp", `^(filter|diff|merge)\.|^core\.(filemode|symlinks)$`}})
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && ge.ExitCode == 1 { // no such keys
			return cfg, nil
		}
		return cfg, fmt.Errorf("reading the repository's git configuration: %w", err)
	}
	seen := map[string]bool{}
	add := func(kv string) {
		if !seen[kv] {
			seen[kv] = true
			cfg.drivers = append(cfg.drivers, "-c", kv)
		}
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		key, value, hasValue := strings.Cut(rec, "\n")
		switch key {
		case "core.filemode":
			cfg.fileMode = !hasValue || configBool(value)
			continue
		case "core.symlinks":
			cfg.symlinks = !hasValue || configBool(value)
			continue
		case "diff.external":
			// An empty value would not unset it (git would try to run ""),
			// so a configured external diff becomes one that fails.
			add("diff.external=false")
			continue
		}
		section, rest, ok := strings.Cut(key, ".")
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		if dot <= 0 {
			continue // another section-level key (diff.renames...): runs nothing
		}
		name := rest[:dot]
		if strings.ContainsAny(name, "=\n") {
			// "-c" cannot spell such a key; refuse rather than run
			// with a driver left armed.
			return cfg, fmt.Errorf("the repository's git configuration defines a %s driver with an unusable name %q; remove it from .git/config", section, name)
		}
		switch section {
		case "filter":
			add("filter." + name + ".clean=")
			add("filter." + name + ".smudge=")
			add("filter." + name + ".process=")
			add("filter." + name + ".required=false")
		case "diff":
			add("diff." + name + ".textconv=cat")
			add("diff." + name + ".command=false")
		case "merge":
			add("merge." + name + ".driver=false")
		}
	}
	return cfg, nil
}

// configBool reads a git boolean the way git does: false, no, off, 0 and
// the empty string are false; anything else is true.
func configBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "no", "off", "0", "":
		return false
	}
	return true
}

// Git runs a hardened git command in the working tree and returns its
// standard output. The repository's drivers are read again first, so a
// configuration changed since Open is neutralized too.
func (r *Repo) Git(ctx context.Context, args ...string) ([]byte, error) {
	return r.GitInput(ctx, nil, args...)
}

// GitInput is Git with stdin.
func (r *Repo) GitInput(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cfg, err := readConfig(ctx, r.Dir, r.env)
	if err != nil {
		return nil, err
	}
	return run(ctx, invocation{dir: r.Dir, args: args, stdin: stdin, env: r.env, drivers: append(cfg.drivers, r.drivers...)})
}

// plumbing runs one of this package's own commands, none of which reads
// the working tree through a filter.
func (r *Repo) plumbing(ctx context.Context, inv invocation) ([]byte, error) {
	inv.dir = r.Dir
	inv.drivers = r.drivers
	inv.env = append(append([]string(nil), r.env...), inv.env...)
	return run(ctx, inv)
}

// checkRev refuses revisions git would read as options.
func checkRev(rev string) error {
	if rev == "" {
		return errors.New("empty revision")
	}
	if strings.HasPrefix(rev, "-") {
		return fmt.Errorf("bad revision %q: a revision cannot start with '-'", rev)
	}
	if strings.ContainsAny(rev, "\x00\n") {
		return fmt.Errorf("bad revision %q: contains a NUL or newline", rev)
	}
	return nil
}

// Resolve returns the full commit id rev names.
func (r *Repo) Resolve(ctx context.Context, rev string) (string, error) {
	return r.resolveAs(ctx, rev, "commit")
}

// resolveTree returns the id of the tree rev names (a commit or a tree).
func (r *Repo) resolveTree(ctx context.Context, rev string) (string, error) {
	return r.resolveAs(ctx, rev, "tree")
}

func (r *Repo) resolveAs(ctx context.Context, rev, kind string) (string, error) {
	if err := checkRev(rev); err != nil {
		return "", err
	}
	out, err := r.plumbing(ctx, invocation{args: []string{"rev-parse", "--verify", "--quiet", rev + "^{" + kind + "}"}})
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			why := strings.TrimSpace(ge.Stderr)
			if why == "" {
				why = "no " + kind + " of that name in " + r.Dir
			}
			if r.shallow(ctx) {
				return "", fmt.Errorf("bad revision %q: %s: %w", rev, why, ErrShallow)
			}
			return "", fmt.Errorf("bad revision %q: %s (pass a branch, tag or commit id that exists)", rev, why)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// ErrNoBase is returned by DefaultBase when no candidate exists.
var ErrNoBase = errors.New("no base: pass --base REV")

// DefaultBase is the commit a change is judged against when the user names
// none: the merge-base of HEAD with its upstream, else with origin/HEAD,
// main, master, origin/main or origin/master, the first that exists and
// shares history with HEAD.
func (r *Repo) DefaultBase(ctx context.Context) (string, error) {
	head, err := r.Resolve(ctx, "HEAD")
	if err != nil {
		return "", fmt.Errorf("the repository has no commit yet, so there is nothing to compare with: %w", ErrNoBase)
	}
	candidates := []string{"HEAD@{upstream}", "refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master", "refs/remotes/origin/main", "refs/remotes/origin/master"}
	for _, c := range candidates {
		id, err := r.plumbing(ctx, invocation{args: []string{"rev-parse", "--verify", "--quiet", c + "^{commit}"}})
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			continue
		}
		mb, err := r.plumbing(ctx, invocation{args: []string{"merge-base", head, strings.TrimSpace(string(id))}})
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			continue // unrelated histories
		}
		return strings.TrimSpace(string(mb)), nil
	}
	if r.shallow(ctx) {
		return "", fmt.Errorf("%w; %w", ErrNoBase, ErrShallow)
	}
	return "", ErrNoBase
}

// ErrShallow says why a commit may be missing: the clone's history was cut
// (git clone --depth), and what to do about it.
var ErrShallow = errors.New("this clone is shallow, so older commits are not in it: fetch the history with `git fetch --unshallow` (or `git fetch --deepen=N` for N more commits) and run again")

// shallow reports whether the repository is a shallow clone.
func (r *Repo) shallow(ctx context.Context) bool {
	out, err := r.plumbing(ctx, invocation{args: []string{"rev-parse", "--is-shallow-repository"}})
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// nullID is the all-zero object id of the repository's hash.
func (r *Repo) nullID() string {
	if r.objectFormat == "sha256" {
		return strings.Repeat("0", 64)
	}
	return strings.Repeat("0", 40)
}
