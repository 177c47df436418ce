package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
)

// A task's working tree is written by an agent bcode does not trust: its
// .git file, its .gitignore files and anything below it may have been
// planted. The functions here never let git discover a repository from
// such a directory (the .git there could name any repository, with any
// configuration), never run porcelain over it, and remove it without git.

// ErrNotLinked: the directory is not a linked working tree of the
// repository, by the repository's own records.
var ErrNotLinked = errors.New("git: not a linked working tree of this repository")

// CommonDir is the repository's common git directory (the main .git),
// the same for every linked working tree of the repository.
func (r *Repo) CommonDir(ctx context.Context) (string, error) { return r.commonDir(ctx) }

// commonDir is the repository's common git directory (the main .git).
func (r *Repo) commonDir(ctx context.Context) (string, error) {
	out, err := r.plumbing(ctx, invocation{args: []string{"rev-parse", "--path-format=absolute", "--git-common-dir"}})
	if err != nil {
		return "", fmt.Errorf("finding the git directory of %s: %w", r.Dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// adminDirs maps each linked working tree's recorded path (the directory
// its admin "gitdir" file names, without the trailing /.git) to its admin
// directory, from the repository's own records only.
func (r *Repo) adminDirs(ctx context.Context) (map[string]string, error) {
	common, err := r.commonDir(ctx)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(common, "worktrees")
	ents, err := sandbox.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		admin := filepath.Join(root, de.Name())
		b, err := sandbox.ReadFile(admin, "gitdir", 64<<10)
		if err != nil {
			continue
		}
		dotgit := strings.TrimSpace(string(b))
		if filepath.Base(dotgit) != ".git" {
			continue
		}
		out[filepath.Dir(dotgit)] = admin
	}
	return out, nil
}

// realDir is dir made absolute with the links in its path resolved, as git
// records worktree paths.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// adminOf is the admin directory r's records give the linked worktree at
// dir, "" when they name none.
func (r *Repo) adminOf(ctx context.Context, dir string) (string, error) {
	want, err := realDir(dir)
	if err != nil {
		return "", fmt.Errorf("worktree directory %q: %w", dir, err)
	}
	admins, err := r.adminDirs(ctx)
	if err != nil {
		return "", err
	}
	return admins[want], nil
}

// LinkedWorktree opens the linked working tree of r at dir without
// discovery: its admin directory is found in r's own records (the
// worktrees/*/gitdir files), and every git process on the returned Repo
// names it and dir explicitly (GIT_DIR, GIT_WORK_TREE), so nothing in dir,
// its .git file least of all, decides which repository or configuration
// git uses.
func (r *Repo) LinkedWorktree(ctx context.Context, dir string) (*Repo, error) {
	want, err := realDir(dir)
	if err != nil {
		return nil, fmt.Errorf("worktree directory %q: %w", dir, err)
	}
	admins, err := r.adminDirs(ctx)
	if err != nil {
		return nil, err
	}
	admin, ok := admins[want]
	if !ok {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotLinked)
	}
	wt := &Repo{Dir: want, GitDir: admin, objectFormat: r.objectFormat,
		env: []string{"GIT_DIR=" + admin, "GIT_WORK_TREE=" + want}}
	if err := wt.loadConfig(ctx); err != nil {
		return nil, err
	}
	return wt, nil
}

// LinkedHead is the ref the linked working tree's HEAD names
// ("refs/heads/<branch>"), read from its admin directory, or "" when HEAD
// is detached.
func (r *Repo) LinkedHead(ctx context.Context) (string, error) {
	out, err := r.plumbing(ctx, invocation{args: []string{"symbolic-ref", "--quiet", "HEAD"}})
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// ResetIndex sets the linked working tree's index to rev's tree, leaving
// its files alone. The index is only a cache of the last checkpoint (for the
// next snapshot, and for git run in the tree); a process killed between
// moving the branch and updating the index leaves it at the commit before.
func (r *Repo) ResetIndex(ctx context.Context, rev string) error {
	if err := checkRev(rev); err != nil {
		return err
	}
	_, err := r.plumbing(ctx, invocation{args: []string{"read-tree", rev}})
	return err
}

// MoveWorktree moves the linked working tree at from to to (which must not
// exist) and updates r's record of it. Unlike `git worktree move`, it does
// not read or validate the .git file in from: the directory is hostile,
// and what it says about itself does not count.
func (r *Repo) MoveWorktree(ctx context.Context, from, to string) error {
	src, err := realDir(from)
	if err != nil {
		return err
	}
	admins, err := r.adminDirs(ctx)
	if err != nil {
		return err
	}
	admin, ok := admins[src]
	if !ok {
		return fmt.Errorf("moving %s: %w", from, ErrNotLinked)
	}
	dst, err := filepath.Abs(to)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("moving %s: %s already exists", from, dst)
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("moving %s: %w", from, err)
	}
	if dst, err = realDir(dst); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(admin, "gitdir"), []byte(filepath.Join(dst, ".git")+"\n")); err != nil {
		return fmt.Errorf("moving %s: recording the new place: %w", from, err)
	}
	// The .git file in the tree is rewritten for the agent's sake (it
	// is its only pointer to the repository); the host never reads it.
	return writeGitfile(dst, admin)
}

// RepairMoved repairs r's records after a move that stopped between the
// rename and rewriting the record (MoveWorktree, or `git worktree move`):
// each directory in dirs that no record names takes over the one record
// naming a missing directory whose path matches prefix. Nothing in the
// directories is read.
func (r *Repo) RepairMoved(ctx context.Context, prefix string, dirs []string) ([]string, error) {
	admins, err := r.adminDirs(ctx)
	if err != nil {
		return nil, err
	}
	var orphans []string // admin dirs of this prefix whose tree is gone
	for path, admin := range admins {
		if strings.HasPrefix(filepath.Base(path), prefix) {
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				orphans = append(orphans, admin)
			}
		}
	}
	var unnamed []string
	for _, d := range dirs {
		real, err := realDir(d)
		if err != nil {
			return nil, err
		}
		if _, ok := admins[real]; !ok {
			unnamed = append(unnamed, real)
		}
	}
	if len(orphans) != 1 || len(unnamed) != 1 {
		return nil, nil // nothing to repair, or no way to tell which is which
	}
	if err := writeFileAtomic(filepath.Join(orphans[0], "gitdir"), []byte(filepath.Join(unnamed[0], ".git")+"\n")); err != nil {
		return nil, err
	}
	return unnamed, writeGitfile(unnamed[0], orphans[0])
}

// writeGitfile replaces dir/.git (whatever it is now: a file, a directory
// or a link the agent planted) with a gitfile naming admin, without
// following anything in dir.
func writeGitfile(dir, admin string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := removeConfined(root, ".git"); err != nil {
		return err
	}
	f, err := root.OpenFile(".git", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "gitdir: %s\n", admin); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeFileAtomic(name string, data []byte) error {
	tmp := name + ".bcode-tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// RemoveLinkedWorktree removes the linked working tree at dir and r's
// record of it, without git reading anything in dir: the directory is
// deleted by bcode (RemoveTree), then `git worktree prune` forgets the
// record of a tree that no longer exists. A directory already gone is only
// pruned. Whatever the agent left there (a .git file naming another
// repository, nested repositories, unreadable directories, huge files), it
// goes.
func (r *Repo) RemoveLinkedWorktree(ctx context.Context, dir string) error {
	admin, err := r.adminOf(ctx, dir)
	if err != nil {
		return err
	}
	if err := RemoveTree(dir); err != nil {
		return fmt.Errorf("removing worktree %s: %w", dir, err)
	}
	if admin != "" {
		// prune keeps a locked worktree's record, and a `git worktree
		// add` killed mid-checkout leaves its "initializing" lock: the
		// record would keep the task's branch checked out at a directory
		// that is gone, and no later holder could check it out.
		if err := os.Remove(filepath.Join(admin, "locked")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("unlocking worktree %s: %w", dir, err)
		}
	}
	if _, err := r.plumbing(ctx, invocation{args: []string{"worktree", "prune"}}); err != nil {
		return fmt.Errorf("pruning worktrees: %w", err)
	}
	return nil
}

// RemoveTree deletes dir and everything below it, never following a link
// out of it: deletion is confined to dir by os.Root, and directories the
// agent made unwritable or unreadable are given back their owner's
// permissions (inside the tree only) first. A missing dir is not an error.
func RemoveTree(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		// dir itself is a link or not a directory: remove only the name.
		return os.Remove(dir)
	}
	err = removeConfined(root, ".")
	root.Close()
	if err != nil {
		return err
	}
	return os.Remove(dir)
}

// removeConfined removes name below root (the contents only, for ".").
func removeConfined(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return root.Remove(name)
	}
	if fi.Mode().Perm()&0o700 != 0o700 {
		if err := root.Chmod(name, 0o700); err != nil {
			return err
		}
	}
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		child := n
		if name != "." {
			child = name + "/" + n
		}
		if err := removeConfined(root, child); err != nil {
			return err
		}
	}
	if name == "." {
		return nil
	}
	return root.Remove(name)
}
