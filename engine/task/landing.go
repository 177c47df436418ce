package task

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
	"github.com/bcode-dev/bcode/verify/tamper"
)

// Ways Accept lands a task.
const (
	MethodFastForward   = "fast-forward"
	MethodCherryPick    = "cherry-pick"
	MethodAlreadyLanded = "already landed"
)

// landingPlan is what accepting would do to the user's branch now: the
// commit it holds, how the task's commits would land, and the tree the
// branch would have after, judged by verify/tamper.Landing against the
// tree it has now.
type landingPlan struct {
	From     string // the checkout's HEAD commit
	Method   string
	Tree     string // the tree the branch would have after accepting
	Findings []verify.Finding
}

// ErrDoesNotApply: the task's commits conflict with the user's branch.
var ErrDoesNotApply = errors.New("the task's commits do not apply to your branch")

// planLanding computes the tree accept would put on the user's branch,
// without touching the checkout, and judges it: a fast-forward lands
// head's tree; a cherry-pick lands what git's merge (merge-ort, as `git
// cherry-pick` runs it) makes of each commit over the branch in turn,
// computed with `merge-tree --write-tree` over a scratch commit of the
// tree so far on the commit's parent. The scratch commits are loose
// objects nothing refers to.
func planLanding(ctx context.Context, user *git.Repo, commits []string, head string) (*landingPlan, error) {
	fromOut, err := user.Git(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("reading your branch's commit: %w", err)
	}
	p := &landingPlan{From: strings.TrimSpace(string(fromOut))}
	switch {
	case isAncestor(ctx, user, head, p.From):
		p.Method, p.Tree = MethodAlreadyLanded, p.From+"^{tree}"
		return p, nil // nothing lands
	case isAncestor(ctx, user, p.From, head):
		p.Method, p.Tree = MethodFastForward, head+"^{tree}"
	default:
		p.Method = MethodCherryPick
		if p.Tree, err = cherryPickTree(ctx, user, p.From, commits); err != nil {
			return nil, err
		}
	}
	if p.Findings, err = tamper.Landing(ctx, gitchange.NewTree(user, p.From), gitchange.NewTree(user, p.Tree)); err != nil {
		return nil, fmt.Errorf("judging what the task would land: %w", err)
	}
	return p, nil
}

func isAncestor(ctx context.Context, user *git.Repo, a, b string) bool {
	_, err := user.Git(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// cherryPickTree is the tree cherry-picking commits onto from would make.
func cherryPickTree(ctx context.Context, user *git.Repo, from string, commits []string) (string, error) {
	out, err := user.Git(ctx, "rev-parse", "--verify", from+"^{tree}")
	if err != nil {
		return "", err
	}
	tree := strings.TrimSpace(string(out))
	for _, c := range commits {
		parents, err := user.Git(ctx, "rev-list", "--parents", "-n", "1", c)
		if err != nil {
			return "", err
		}
		ps := strings.Fields(string(parents))[1:]
		if len(ps) != 1 {
			return "", fmt.Errorf("%w: commit %.12s has %d parents (cherry-pick takes one)", ErrDoesNotApply, c, len(ps))
		}
		// A commit with the tree so far whose only parent is c's: the
		// merge base of it and c is that parent, as in a cherry-pick.
		ours, err := user.Git(ctx, append(slices.Clone(identity), "commit-tree", tree, "-p", ps[0], "-m", "bcode: accept preview")...)
		if err != nil {
			return "", fmt.Errorf("previewing the cherry-pick: %w", err)
		}
		merged, err := user.Git(ctx, "merge-tree", "--write-tree", "--no-messages", strings.TrimSpace(string(ours)), c)
		if err != nil {
			var ge *git.Error
			if errors.As(err, &ge) && ge.ExitCode == 1 {
				return "", fmt.Errorf("%w: commit %.12s conflicts", ErrDoesNotApply, c)
			}
			return "", fmt.Errorf("previewing the cherry-pick: %w", err)
		}
		tree = strings.TrimSpace(strings.SplitN(string(merged), "\n", 2)[0])
	}
	return tree, nil
}

// LandingFindings are the findings (verify/tamper.Landing) of what
// accepting head would put on the user's branch now: the tree a
// fast-forward or a cherry-pick would make, against the tree the branch
// has. When that cannot be computed (the commits would not apply, the
// checkout is on an unborn branch: accept would refuse anyway), head's
// tree is judged against base's. Everything is read from the object
// database.
func LandingFindings(ctx context.Context, user *git.Repo, base, head string) ([]verify.Finding, error) {
	out, err := user.Git(ctx, "rev-list", "--reverse", base+".."+head)
	if err != nil {
		return nil, fmt.Errorf("listing the task's commits: %w", err)
	}
	p, err := planLanding(ctx, user, strings.Fields(string(out)), head)
	if err == nil {
		return p.Findings, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	// The commits would not apply, or the checkout has no commit to land
	// on (an unborn branch): accept refuses either way; judge the change.
	return tamper.Landing(ctx, gitchange.NewTree(user, base), gitchange.NewTree(user, head))
}

// acceptPlan is planLanding for Accept: the plan and its findings, or,
// when the commits would not apply, head's tree judged against base's and
// the reason it would not apply (Accept lists the findings first and then
// refuses).
func acceptPlan(ctx context.Context, user *git.Repo, base string, commits []string, head string) (*landingPlan, []verify.Finding, error, error) {
	plan, err := planLanding(ctx, user, commits, head)
	if errors.Is(err, ErrDoesNotApply) {
		fs, ferr := LandingFindings(ctx, user, base, head)
		return nil, fs, err, ferr
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return plan, plan.Findings, nil, nil
}

// checkLanded makes sure the tree the cherry-pick made is the one judged.
// Both come from git's merge-ort, so they agree; if they ever do not, the
// landed tree is judged again, and one with findings not forced is undone
// (the checkout and the branch go back to plan.From) with an error.
func checkLanded(ctx context.Context, user *git.Repo, plan *landingPlan, branch string, force bool) ([]verify.Finding, error) {
	var trees []string
	for _, rev := range []string{"HEAD^{tree}", plan.Tree + "^{tree}"} {
		out, err := user.Git(ctx, "rev-parse", "--verify", rev)
		if err != nil {
			return nil, err
		}
		trees = append(trees, strings.TrimSpace(string(out)))
	}
	if trees[0] == trees[1] {
		return plan.Findings, nil
	}
	findings, err := tamper.Landing(ctx, gitchange.NewTree(user, plan.From), gitchange.NewTree(user, "HEAD^{tree}"))
	if err != nil || (len(findings) > 0 && !force) {
		now, rerr := user.Git(ctx, "rev-parse", "--verify", "HEAD")
		if rerr == nil {
			cur := strings.TrimSpace(string(now))
			if _, rerr = user.Git(ctx, "read-tree", "-m", "-u", cur, plan.From); rerr == nil {
				_, rerr = user.Git(ctx, "update-ref", "-m", "bcode: undo accept", "refs/heads/"+branch, plan.From, cur)
			}
		}
		if err == nil {
			err = fmt.Errorf("%w:%s", ErrLandsHostile, describeFindings(findings))
		}
		if rerr != nil {
			return nil, fmt.Errorf("the cherry-pick landed a tree other than the one judged, and undoing it failed (reset your branch to %.12s): %w; %w", plan.From, err, rerr)
		}
		return nil, fmt.Errorf("the cherry-pick landed a tree other than the one judged; it was undone, nothing changed: %w", err)
	}
	return findings, nil
}
