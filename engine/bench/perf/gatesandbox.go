package perf

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/check/labelled"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

func init() {
	register(benchmark{
		name:    "gate-sandbox",
		summary: "what verifying in the Docker sandbox costs: the same labelled cases checked on the host and in containers, side by side",
		run:     runGateSandboxBench,
	})
}

// Python cases run in the sandbox as they are. Go cases get what `bcode
// task run` gives the agent's checks: a build cache seeded from the base
// on the host and served read-only by the bcode CLI (`bcode sandbox
// gocache`), which this benchmark builds; the first check of each base
// warms the seed, and best-of-rounds leaves that out.
const defaultSandboxCases = "py-correct-fix,py-class-method,py-incorrect-fix,py-passes-on-base,py-skip-decorator,py-breaks-other-test," +
	"go-correct-fix,go-incorrect-fix,go-passes-on-base,go-skip-added"

func runGateSandboxBench(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "bcode bench perf gate-sandbox: "+format, a...)
		return 2
	}
	fs := flag.NewFlagSet("bcode bench perf gate-sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	suite := fs.String("suite", "", "directory of labelled *.txtar cases (default: engine/check/testdata/suite of the bcode module)")
	only := fs.String("cases", defaultSandboxCases, "comma-separated suite cases")
	rounds := fs.Int("rounds", 2, "times each case is checked on each side (alternating host and docker)")
	image := fs.String("image", "bcode-sandbox:bench", "sandbox image to build and use")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *rounds < 1 {
		return fail("-rounds must be at least 1\n")
	}
	cases, err := sandboxCases(*suite, *only)
	if err != nil {
		return fail("%v\n", err)
	}
	if err := buildSandboxImage(ctx, *image); err != nil {
		return fail("%v\n", err)
	}
	scratch, err := os.MkdirTemp("", "bcode-bench-gate-sandbox-")
	if err != nil {
		return fail("%v\n", err)
	}
	defer os.RemoveAll(scratch)

	// The bcode CLI, for the Go cases' seeded build cache.
	bcodeBin := filepath.Join(scratch, "bcode")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bcodeBin, "github.com/bcode-dev/bcode/cmd/bcode").CombinedOutput(); err != nil {
		return fail("building bcode: %v\n%s", err, out)
	}
	cfg := config.Default()
	cfg.Sandbox.Image = *image
	cacheOpts := agentbackend.Options{GoCacheProg: []string{bcodeBin, "sandbox", "gocache"}, GoCacheSeed: filepath.Join(scratch, "seed")}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(stdout, "## The gate on the host and in the Docker sandbox (no mutation evidence; best of", *rounds, "rounds)")
	fmt.Fprintln(stdout)
	fmt.Fprintln(tw, "CASE\tLABEL\tHOST\tDOCKER\tRATIO\tVERDICTS")
	var sumHost, sumDocker time.Duration
	code := 0
	for _, c := range cases {
		dir := filepath.Join(scratch, c.Name)
		sides, err := sandboxSides(ctx, c, dir, cfg, cacheOpts)
		if err != nil {
			return fail("%s: %v\n", c.Name, err)
		}
		best, verdicts, err := bestOfRounds(ctx, c, dir, sides, *rounds)
		if errors.Is(err, errInterrupted) {
			return 2
		}
		if err != nil {
			return fail("%v\n", err)
		}
		same := "same"
		if verdicts["host"] != verdicts["docker"] || verdicts["host"] != c.Verdict {
			same, code = fmt.Sprintf("host %s, docker %s", verdicts["host"], verdicts["docker"]), 1
		}
		sumHost += best["host"]
		sumDocker += best["docker"]
		fmt.Fprintf(tw, "%s\t%s\t%.1fs\t%.1fs\t%.1f×\t%s\n", c.Name, c.Verdict, best["host"].Seconds(), best["docker"].Seconds(),
			best["docker"].Seconds()/best["host"].Seconds(), same)
	}
	fmt.Fprintf(tw, "total\t\t%.1fs\t%.1fs\t%.1f×\t\n", sumHost.Seconds(), sumDocker.Seconds(), sumDocker.Seconds()/sumHost.Seconds())
	tw.Flush()
	return code
}

// sandboxCases are the named cases of the suite; the Python ones need
// pytest.
func sandboxCases(suite, only string) ([]labelled.Case, error) {
	all, err := loadSuite(suite)
	if err != nil {
		return nil, err
	}
	var cases []labelled.Case
	for _, name := range splitList(only) {
		i := slices.IndexFunc(all, func(c labelled.Case) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no case %q", name)
		}
		cases = append(cases, all[i])
	}
	if slices.ContainsFunc(cases, func(c labelled.Case) bool { return c.Python }) && !pytestAvailable() {
		return nil, fmt.Errorf("%s -m pytest is unavailable (apt-get install python3-pytest)", pytestPython)
	}
	return cases, nil
}

// buildSandboxImage builds the sandbox image the docker side runs in.
func buildSandboxImage(ctx context.Context, image string) error {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	e, err := docker.Connect(cctx)
	cancel()
	if err != nil {
		return err
	}
	defer e.Close()
	if _, err := e.BuildImage(ctx, image); err != nil {
		return fmt.Errorf("building %s: %v", image, err)
	}
	return nil
}

// errInterrupted: the benchmark was stopped between rounds.
var errInterrupted = errors.New("interrupted")

// sandboxSide is one place a check runs.
type sandboxSide struct {
	name string
	sb   sandbox.Sandbox
}

// sandboxSides builds the case in dir and returns the host and the
// agent's Docker sandbox on its base.
func sandboxSides(ctx context.Context, c labelled.Case, dir string, cfg config.Config, cacheOpts agentbackend.Options) ([]sandboxSide, error) {
	if err := c.Build(ctx, dir); err != nil {
		return nil, err
	}
	base, _ := c.Revisions()
	baseID, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", base).Output()
	if err != nil {
		return nil, err
	}
	return []sandboxSide{
		{"host", host.Sandbox{}},
		{"docker", agentbackend.NewSandbox(cfg, cacheOpts, dir, strings.TrimSpace(string(baseID)))},
	}, nil
}

// bestOfRounds checks the case on each side, alternating, rounds times,
// and keeps each side's best time and last verdict.
func bestOfRounds(ctx context.Context, c labelled.Case, dir string, sides []sandboxSide, rounds int) (map[string]time.Duration, map[string]verify.Verdict, error) {
	base, head := c.Revisions()
	best := map[string]time.Duration{}
	verdicts := map[string]verify.Verdict{}
	for range rounds {
		for _, s := range sides {
			// check.Run, not app.Check: this compares one check on two
			// sandboxes the benchmark builds (its image, its seeded build
			// cache), which app.Check takes from the base's config and
			// the bcode binary by design; it measures the sandbox, not
			// the command.
			scanner := benchScanner() // the process's one, as bcode's: built before the clock starts
			start := time.Now()
			rep, err := check.Run(ctx, check.Options{Repo: dir, Base: base, Head: head, Sandbox: s.sb, NoEvidence: true, Scanner: scanner})
			d := time.Since(start)
			if rep == nil {
				return nil, nil, fmt.Errorf("%s on %s: %v", c.Name, s.name, err)
			}
			if b, ok := best[s.name]; !ok || d < b {
				best[s.name] = d
			}
			verdicts[s.name] = rep.Verdict
		}
		if ctx.Err() != nil {
			return nil, nil, errInterrupted
		}
	}
	return best, verdicts, nil
}
