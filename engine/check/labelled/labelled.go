// Package labelled reads the gate's labelled suite: txtar files, each a
// change (base/ and head/ files) with the verdict a careful human gives it
// (engine/check/testdata/suite/README.md documents the format). The suite's
// test and `bcode bench perf gate` both judge the same cases, so they read them
// through this one parser.
package labelled

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/verify"
)

// Case is one labelled change.
type Case struct {
	Name     string // the file name without .txtar
	Verdict  verify.Verdict
	Kind     string
	Why      string
	Worktree bool     // head left uncommitted in the working tree
	Findings []string // tamper finding codes that must be reported
	Python   bool
	Base     []txtar.File // paths relative to the repository root
	Head     []txtar.File // content "<deleted>" deletes the file

	// Real-corpus provenance (engine/check/testdata/real/README.md).
	Source   string   // the public repository the change comes from
	Commit   string   // the original commit
	From     string   // a variant: the case whose base and head it starts from
	Evidence []string // the hand runs the label comes from
}

// Verdicts are the labels a case may carry.
var Verdicts = []verify.Verdict{verify.Verified, verify.Green, verify.Failed, verify.Tampered, verify.Error}

// Load parses every case in dir, sorted by name; a malformed case is an
// error naming its file, so a typo in a label fails loudly instead of
// silently testing nothing.
func Load(dir string) ([]Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no *.txtar cases in %s", dir)
	}
	sort.Strings(paths)
	var out []Case
	for _, p := range paths {
		c, err := Parse(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Parse reads one case file.
func Parse(path string) (Case, error) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		return Case{}, err
	}
	c := Case{Name: strings.TrimSuffix(filepath.Base(path), ".txtar")}
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return c, fmt.Errorf("comment line %q is not key: value", line)
		}
		if err := c.setLabel(key, strings.TrimSpace(val)); err != nil {
			return c, err
		}
	}
	if !slices.Contains(Verdicts, c.Verdict) {
		return c, fmt.Errorf("verdict %q is not one of %v", c.Verdict, Verdicts)
	}
	if c.Kind == "" || c.Why == "" {
		return c, fmt.Errorf("kind and why are required")
	}
	for _, f := range ar.Files {
		if err := c.addFile(f); err != nil {
			return c, err
		}
	}
	if (len(c.Base) == 0 && c.From == "") || len(c.Head) == 0 {
		return c, fmt.Errorf("a case needs base/ and head/ files (a variant, with from:, only head/ files)")
	}
	return c, nil
}

// setLabel records one "key: value" line of the case's comment; an
// unknown key is an error (quoting key as written).
func (c *Case) setLabel(key, val string) error {
	switch strings.TrimSpace(key) {
	case "verdict":
		c.Verdict = verify.Verdict(val)
	case "kind":
		c.Kind = val
	case "why":
		c.Why = val
	case "head":
		if val != "worktree" {
			return fmt.Errorf("head: %q (only \"worktree\" is known)", val)
		}
		c.Worktree = true
	case "source":
		c.Source = val
	case "commit":
		c.Commit = val
	case "from":
		c.From = val
	case "evidence":
		c.Evidence = append(c.Evidence, val)
	case "subject", "trimmed":
		// descriptive only
	case "findings":
		for _, f := range strings.Split(val, ",") {
			if f = strings.TrimSpace(f); f != "" {
				c.Findings = append(c.Findings, f)
			}
		}
	default:
		return fmt.Errorf("unknown key %q", key)
	}
	return nil
}

// addFile adds an archive file, base/<path> or head/<path>, to its side of
// the case; a path climbing out of the repository is an error.
func (c *Case) addFile(f txtar.File) error {
	side, rel, ok := strings.Cut(f.Name, "/")
	if !ok || rel == "" || strings.Contains("/"+rel+"/", "/../") {
		return fmt.Errorf("file %q is not base/<path> or head/<path>", f.Name)
	}
	if strings.HasSuffix(rel, ".py") {
		c.Python = true
	}
	nf := txtar.File{Name: rel, Data: expandFakeSecrets(f.Data)}
	switch side {
	case "base":
		c.Base = append(c.Base, nf)
	case "head":
		c.Head = append(c.Head, nf)
	default:
		return fmt.Errorf("file %q is not base/<path> or head/<path>", f.Name)
	}
	return nil
}

var fakeSecret = regexp.MustCompile(`\{\{fake-secret:([a-z-]+)\}\}`)

// expandFakeSecrets replaces placeholders with credential-shaped values from
// a fixed-seed generator, so no such value is ever stored in this repository.
// Unknown kinds stay visible (and the suite's format test fails on them).
func expandFakeSecrets(b []byte) []byte {
	return fakeSecret.ReplaceAllFunc(b, func(m []byte) []byte {
		kind := string(fakeSecret.FindSubmatch(m)[1])
		h := fnv.New64a()
		h.Write([]byte(kind))
		r := rand.New(rand.NewPCG(h.Sum64(), 0x6263_6f64_65))
		pick := func(alphabet string, n int) string {
			var sb strings.Builder
			for range n {
				sb.WriteByte(alphabet[r.IntN(len(alphabet))])
			}
			return sb.String()
		}
		const alnum = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		switch kind {
		case "github-pat":
			return []byte("ghp_" + pick(alnum, 36))
		case "aws-access-key-id":
			return []byte("AKIA" + pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16))
		case "aws-secret-access-key":
			return []byte(pick(alnum+"/+", 40))
		}
		return m
	})
}

// Revisions is what the case is checked as: two commits, or the working
// tree against its only commit.
func (c Case) Revisions() (base, head string) {
	if c.Worktree {
		return "HEAD", ""
	}
	return "HEAD~1", "HEAD"
}

// Build makes the case's git repository in dir (created if missing): the
// base commit, then the head as a second commit or, for worktree cases, as
// uncommitted changes. Git runs without the user's configuration or hooks.
func (c Case) Build(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{
			"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null",
			"-c", "user.name=bcode suite", "-c", "user.email=suite@bcode.invalid",
		}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	steps := []func() error{
		func() error { return git("init", "-q") },
		func() error { return WriteFiles(dir, c.Base) },
		func() error { return git("add", "-A") },
		func() error { return git("commit", "-q", "-m", "base: "+c.Name) },
		func() error { return WriteFiles(dir, c.Head) },
	}
	if !c.Worktree {
		steps = append(steps, func() error { return git("add", "-A") }, func() error { return git("commit", "-q", "-m", "head: "+c.Name) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles writes files below dir; a file whose content is "<deleted>"
// is removed instead.
func WriteFiles(dir string, files []txtar.File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if string(bytes.TrimSpace(f.Data)) == "<deleted>" {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("deleting %s: %w", f.Name, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
