package tamper_test

import (
	"context"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/gitchange"
	"github.com/bcode-dev/bcode/verify/tamper"
	"github.com/bcode-dev/bcode/verify/tamper/landingtest"
)

// TestLandingSuite runs the landing attack suite against Landing over
// git's trees (gitchange.Tree), as accept and the gate call it.
func TestLandingSuite(t *testing.T) {
	landingtest.Run(t, func(ctx context.Context, dir, base, head string) ([]verify.Finding, error) {
		repo, err := git.Open(ctx, dir)
		if err != nil {
			return nil, err
		}
		return tamper.Landing(ctx, gitchange.NewTree(repo, base), gitchange.NewTree(repo, head))
	})
}
