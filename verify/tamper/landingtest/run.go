package landingtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify"
)

// Judge is the boundary under test: the findings of landing head on a
// checkout of base, both commits of the repository at dir.
type Judge func(ctx context.Context, dir, base, head string) ([]verify.Finding, error)

// Run runs every attack and every clean case against judge. An attack is
// held when judge reports each code of its Want; a clean case when judge
// reports nothing. For every link the agent adds, the kernel's resolution
// in a plain checkout is compared with the verdict: a link the kernel
// cannot resolve, or resolves outside the checkout or into .git, must be a
// symlink finding.
func Run(t *testing.T, judge Judge) {
	var tried, held atomic.Int32
	t.Run("attacks", func(t *testing.T) {
		for _, c := range Attacks() {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				tried.Add(1)
				r := Build(t, c)
				co := Checkout(t, r.Dir, r.Head)
				if c.Armed != nil {
					if how := c.Armed(t, r, co); how == "" {
						t.Errorf("control: plain git and the kernel were not affected; the attack is not armed")
					} else {
						t.Logf("armed: %s", how)
					}
				}
				got := judgeCodes(t, judge, r)
				for _, w := range c.Want {
					if !slices.Contains(got.codes, w) {
						t.Errorf("%s not reported; findings: %s", w, got)
					}
				}
				kernelAgrees(t, c, co, got)
				if !t.Failed() {
					held.Add(1)
				}
			})
		}
	})
	t.Run("clean", func(t *testing.T) {
		for _, c := range Clean() {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				r := Build(t, c)
				got := judgeCodes(t, judge, r)
				if len(got.codes) > 0 {
					t.Errorf("a clean change has findings: %s", got)
				}
				kernelAgrees(t, c, Checkout(t, r.Dir, r.Head), got)
			})
		}
	})
	t.Logf("landing attacks held %d of %d", held.Load(), tried.Load())
}

type judged struct {
	codes []string
	fs    []verify.Finding
}

func (j judged) String() string {
	var b strings.Builder
	for _, f := range j.fs {
		fmt.Fprintf(&b, "\n  %s %q: %.300s", f.Code, f.Path, f.Message)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func judgeCodes(t *testing.T, judge Judge, r Repo) judged {
	t.Helper()
	fs, err := judge(context.Background(), r.Dir, r.Base, r.Head)
	if err != nil {
		t.Fatalf("judge: %v", err)
	}
	var j judged
	j.fs = fs
	for _, f := range fs {
		j.codes = append(j.codes, f.Code)
	}
	return j
}

// kernelAgrees: every link of the agent's commit that the kernel does not
// resolve to something inside the checkout (outside .git) is a symlink
// finding of the judge.
func kernelAgrees(t *testing.T, c Case, co string, got judged) {
	t.Helper()
	for _, f := range c.Agent {
		if f.Mode != Link || f.Delete {
			continue
		}
		how := resolveInCheckout(co, f.Path)
		if how == "" {
			continue
		}
		found := false
		for _, g := range got.fs {
			found = found || (g.Path == f.Path && strings.HasPrefix(g.Code, "symlink_"))
		}
		if !found {
			t.Errorf("the kernel: %s %s; the judge reported no symlink finding for it: %s", f.Path, how, got)
		}
	}
}

// resolveInCheckout says how the kernel fails to resolve p inside the
// checkout co: it cannot (the error), or it resolves outside co or into
// its .git. "" when it resolves to something inside.
func resolveInCheckout(co, p string) string {
	full := filepath.Join(co, filepath.FromSlash(p))
	if _, err := os.Lstat(full); err != nil {
		return "" // git did not make it (a path it refused)
	}
	if _, err := os.Stat(full); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "does not resolve: " + err.Error()
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "does not resolve: " + err.Error()
	}
	top, err := filepath.EvalSymlinks(co)
	if err != nil {
		return "checkout: " + err.Error()
	}
	rel, err := filepath.Rel(top, real)
	switch {
	case err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		return "resolves outside the checkout, to " + real
	case rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)):
		return "resolves into .git, to " + real
	}
	return ""
}

// kernelLeaves arms a link attack: in a plain checkout, the kernel does not
// resolve p to something inside the tree.
func kernelLeaves(p string) func(testing.TB, Repo, string) string {
	return func(_ testing.TB, _ Repo, co string) string {
		if how := resolveInCheckout(co, p); how != "" {
			return "the kernel: " + p + " " + how
		}
		return ""
	}
}

// gitAttr arms an attribute attack: plain git in a checkout gives p the
// attribute.
func gitAttr(p, attr string) func(testing.TB, Repo, string) string {
	return func(t testing.TB, _ Repo, co string) string {
		out, err := testrepo.Command(co, "check-attr", attr, "--", p).Output()
		if err != nil {
			t.Logf("check-attr: %v", err)
			return ""
		}
		s := strings.TrimSpace(string(out))
		if strings.HasSuffix(s, ": unspecified") {
			return ""
		}
		return "plain git: " + s
	}
}

// gitDiffBinary arms a binary attack: plain git diff of the change hides
// p's content ("Binary files … differ").
func gitDiffBinary(p string) func(testing.TB, Repo, string) string {
	return func(t testing.TB, r Repo, co string) string {
		out, err := testrepo.Command(co, "diff", r.Base, r.Head, "--", p).CombinedOutput()
		if err != nil {
			t.Logf("diff: %v %s", err, out)
			return ""
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "Binary files ") {
				return "plain git diff: " + l
			}
		}
		return ""
	}
}

// gitSees arms an attack plain git reports on: the command prints
// something in the checkout.
func gitSees(args ...string) func(testing.TB, Repo, string) string {
	return func(t testing.TB, _ Repo, co string) string {
		out, err := testrepo.Command(co, args...).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			return ""
		}
		return "plain git " + args[0] + ": " + strings.TrimSpace(string(out))
	}
}
