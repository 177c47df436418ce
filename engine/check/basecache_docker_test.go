package check_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/internal/testenv"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/docker/dockertest"
	"github.com/bcode-dev/bcode/verify"
)

// TestBaseResultsReusedInDocker: a gate whose tests run in the Docker
// sandbox keys the base by the image's id, the user, the limits and the
// mounts (docker.Runner.Identity), so a later change on the same base in
// the same sandbox reads the stored run (each check on a scratch directory
// of its own) and judges as a fresh run does; another image under the
// same tag, another image, or another memory limit each run the base
// again, and the first sandbox still finds its run afterwards.
func TestBaseResultsReusedInDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pytest in containers; skipped with -short")
	}
	testenv.SystemPytest(t)
	e := dockertest.Connect(t)
	const image, other = "bcode-sandbox:basecache-a", "bcode-sandbox:basecache-b"
	dockertest.Image(t, e, image)
	derived(t, image, other, "b")

	r := clampFixRepo(t, nil)
	r.git("checkout", "-q", "-b", "other", "HEAD~1")
	r.write(map[string]string{"tests/test_max.py": "def test_max():\n    assert max(2, 3) == 3\n"})
	r.commit("a test of max")
	r.git("checkout", "-q", "main")
	led := openLedger(t)
	in := func(cfg docker.Config) check.Options {
		return check.Options{Sandbox: docker.Sandbox{Template: cfg}, Recorder: led}
	}
	first := checkOn(t, r, "main~1", "main", in(docker.Config{Image: image}))
	if first.BaseReused != nil || first.Runner != "docker" || first.Verdict != verify.Verified {
		t.Fatalf("first check: %s in %s, reused %+v: want verified in docker, the base run", first.Verdict, first.Runner, first.BaseReused)
	}
	later := checkOn(t, r, "main~1", "other", in(docker.Config{Image: image}))
	if later.BaseReused == nil {
		t.Fatalf("a later change in the same sandbox: not reused (%v)", later.Notes)
	}
	fresh := checkOn(t, r, "main~1", "other", check.Options{Sandbox: docker.Sandbox{Template: docker.Config{Image: image}}, Recorder: led, NoCache: true})
	sameJudgement(t, later, fresh)

	misses := []struct {
		name  string
		cfg   docker.Config
		setup func()
	}{
		{name: "another image", cfg: docker.Config{Image: other}},
		{name: "another memory limit", cfg: docker.Config{Image: image, MemoryBytes: 3 << 30}},
		// Last: the tag then names another image for good.
		{name: "the same tag rebuilt as another image", cfg: docker.Config{Image: image}, setup: func() { derived(t, image, image, "rebuilt") }},
	}
	for _, m := range misses {
		if m.setup != nil {
			m.setup()
		}
		rep := checkOn(t, r, "main~1", "main", in(m.cfg))
		// A miss, not a key that failed: the run is keyed and stored.
		if notes := strings.Join(rep.Notes, "\n"); rep.BaseReused != nil || strings.Contains(notes, "cannot key") {
			t.Errorf("%s: reused %+v, notes %q: want the base run again under a key of its own", m.name, rep.BaseReused, notes)
		}
		if rep.Verdict != verify.Verified {
			t.Errorf("%s: %s %v", m.name, rep.Verdict, rep.Reasons)
		}
	}
	again := checkOn(t, r, "main~1", "main", in(docker.Config{Image: other}))
	if again.BaseReused == nil {
		t.Fatalf("the other image again: not reused (%v)", again.Notes)
	}
}

// derived tags as to an image made from from with one more label: the same
// files, another image id. It is removed when t ends.
func derived(t *testing.T, from, to, label string) {
	t.Helper()
	cmd := exec.Command("docker", "build", "-q", "-t", to, "-")
	cmd.Stdin = strings.NewReader("FROM " + from + "\nLABEL dev.bcode.test.basecache=" + label + "\n")
	cmd.Env = append(cmd.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v: %s", to, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", to).Run() })
}
