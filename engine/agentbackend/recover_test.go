package agentbackend

import (
	"errors"
	"testing"

	"github.com/bcode-dev/bcode/sandbox/docker"
)

// TestRecoverFailsOnlyForItsOwnDisks: a disk another task's dead runner
// left that will not release is that task's, not this one's; this task's
// own, and any other kind of failure, still stop it.
func TestRecoverFailsOnlyForItsOwnDisks(t *testing.T) {
	other := &docker.StaleDiskError{Dir: "/s/worktrees/zzz-f2", Err: errors.New("busy")}
	own := &docker.StaleDiskError{Dir: "/s/worktrees/abc-f2", Err: errors.New("busy")}
	prefix := &docker.StaleDiskError{Dir: "/s/worktrees/abcd-f2", Err: errors.New("busy")}
	plain := errors.New("mountinfo unreadable")
	for _, c := range []struct {
		name string
		in   error
		want []error
	}{
		{"none", nil, nil},
		{"another task's", errors.Join(other), nil},
		{"another task's alone", other, nil},
		{"a task whose id starts with this one's", errors.Join(prefix), nil},
		{"its own", errors.Join(other, own), []error{own}},
		{"its own alone", own, []error{own}},
		{"any other failure", errors.Join(other, plain), []error{plain}},
	} {
		got := ownDiskErrors(c.in, "abc")
		if (got == nil) != (c.want == nil) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for _, w := range c.want {
			if !errors.Is(got, w) {
				t.Errorf("%s: %v lacks %v", c.name, got, w)
			}
		}
		if errors.Is(got, other) {
			t.Errorf("%s: %v fails this task for another's disk", c.name, got)
		}
	}
}
