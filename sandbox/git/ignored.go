package git

import (
	"bytes"
	"context"
	"strings"
)

// IgnoredDirs lists the directories the repository's ignore rules exclude
// (.gitignore, .git/info/exclude), repository-relative with a trailing
// slash, as `git ls-files --others --ignored --exclude-standard
// --directory` reports them. A watcher uses it to leave node_modules,
// build output and virtualenvs alone.
func (r *Repo) IgnoredDirs(ctx context.Context) ([]string, error) {
	out, err := r.plumbing(ctx, invocation{args: []string{"ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--no-empty-directory"}})
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if s := string(p); strings.HasSuffix(s, "/") {
			dirs = append(dirs, s)
		}
	}
	return dirs, nil
}
