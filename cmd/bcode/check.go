package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/mod/module"

	"github.com/bcode-dev/bcode/engine/agentbackend"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/docker"
	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/sandbox/gotool"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/verify"
)

func init() {
	register(command{
		name:    "check",
		summary: "decide whether a change is verified: its new tests fail before it and pass after it",
		run:     cmdCheck,
	})
}

// Exit codes of `bcode check`: 0 only for verified, so a script can gate on it.
const (
	exitVerified    = 0
	exitNotVerified = 1
	exitError       = 2
)

func cmdCheck(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var st stateFlags
	st.register(fs)
	base := fs.String("base", "", "base revision (default: merge-base with the upstream or main branch)")
	head := fs.String("head", "", "head revision (default: the working tree, committed or not)")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	quiet := fs.Bool("q", false, "do not print progress")
	noEvidence := fs.Bool("no-evidence", false, "skip mutation evidence (credited tests must otherwise kill a mutant of the changed code)")
	where := fs.String("sandbox", "host", "where the tests run: host, or docker for a change you have not read (the agent's sandbox: no network, no capabilities; needs `bcode sandbox build`)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bcode check [--base REV] [--head REV] [--json] [--sandbox host|docker] [--repo DIR] [--state DIR]")
		fmt.Fprintln(stderr, "\nExit status: 0 verified, 1 not verified (green, failed, tampered), 2 error.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bcode check: unexpected argument %q\n", fs.Arg(0))
		return exitError
	}
	if *where != "host" && *where != "docker" {
		fmt.Fprintf(stderr, "bcode check: --sandbox %q: want host or docker\n", *where)
		return exitError
	}
	if err := st.use(eng); err != nil {
		errorf(stderr, "bcode check", "%v", err)
		return exitError
	}
	var progress verify.Progress = verify.NoProgress{}
	if !*quiet {
		progress = stepPrinter{w: stderr, start: time.Now()}
	}
	req := app.CheckRequest{Repo: st.repo, Base: *base, Head: *head, Progress: progress, NoEvidence: *noEvidence}
	if *where == "docker" {
		sb, err := dockerSandbox(ctx, st.repo, *base, *head, stderr)
		if err != nil {
			errorf(stderr, "bcode check", "%v", err)
			return exitError
		}
		req.Sandbox = sb
	}
	rep, err := eng.Check(ctx, req)
	if err != nil && rep == nil {
		errorf(stderr, "bcode check", "%v", err)
		return exitError
	}
	if err != nil {
		errorf(stderr, "bcode check", "%v", err)
	}
	if *asJSON {
		if b, err := shown.JSONIndent(rep, "", "  "); err == nil {
			stdout.Write(append(b, '\n'))
		}
	} else {
		printReport(stdout, rep)
	}
	switch {
	case rep.Verdict == verify.Verified && err == nil:
		return exitVerified
	case rep.Verdict == verify.Error || err != nil:
		return exitError
	}
	return exitNotVerified
}

// stepPrinter shows progress on stderr with the time since the start.
type stepPrinter struct {
	w     io.Writer
	start time.Time
}

func (s stepPrinter) Step(format string, args ...any) {
	fmt.Fprintf(s.w, "[%5.1fs] %s\n", time.Since(s.start).Seconds(), shown.Line(fmt.Sprintf(format, args...)))
}

// printReport is the two-second read: the verdict first, then each test and
// why it did or did not earn credit, then the suites and tamper findings.
func printReport(w io.Writer, r *verify.Report) {
	fmt.Fprintf(w, "%s  %s → %s  (%d files, %.1fs, runner %s)\n",
		strings.ToUpper(string(r.Verdict)), short(r.Base), short(r.Head), r.Files, float64(r.DurationMS)/1000, r.Runner)
	for _, rs := range r.Reasons {
		fmt.Fprintf(w, "  %s\n", shown.Line(rs.Message))
	}
	if len(r.Tests) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TEST\tFILE\tBASE\tHEAD\tCREDIT\tWHY")
		for _, t := range r.Tests {
			credit := "no"
			if t.Credited {
				credit = "yes"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", shown.Line(t.Name), shown.Line(t.File), t.BaseOutcome, t.HeadOutcome, credit, shown.Line(t.ReasonText))
		}
		tw.Flush()
		// Without this line a reader takes BASE for the untouched base and
		// misreads "skip skip" beside a "skipped on the head" finding.
		fmt.Fprintln(w, "  (BASE: the base commit with the change's test files laid over it)")
	}
	fmt.Fprintf(w, "\n  suite: targeted %s (%d targets, %.1fs), full %s (%.1fs)\n",
		r.Suite.Targeted.Outcome, len(r.Suite.Targeted.Targets), r.Suite.Targeted.Duration.Seconds(),
		r.Suite.Full.Outcome, r.Suite.Full.Duration.Seconds())
	for _, s := range []verify.SuiteResult{r.Suite.Targeted, r.Suite.Full} {
		for i, f := range s.Failed {
			if i == 5 {
				fmt.Fprintf(w, "    … and %d more\n", len(s.Failed)-5)
				break
			}
			fmt.Fprintf(w, "    failing: %s\n", shown.Line(f))
		}
	}
	if len(r.Tamper) > 0 {
		fmt.Fprintln(w, "\n  tamper findings:")
		for _, f := range r.Tamper {
			loc := f.Path
			if f.Line > 0 {
				loc = fmt.Sprintf("%s:%d", f.Path, f.Line)
			}
			fmt.Fprintf(w, "    %s  %s  %s\n", shown.Line(f.Code), shown.Line(loc), shown.Line(f.Message))
		}
	}
	if m := r.Mutants; m != nil {
		fmt.Fprintf(w, "\n  mutants: %d, %d survive, %d killed by credited tests", len(m.Mutants), m.Survived, m.CreditedKills)
		if m.Note != "" {
			fmt.Fprintf(w, " (%s)", shown.Line(m.Note))
		}
		fmt.Fprintln(w)
	}
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	if rev == "" {
		return "?"
	}
	return rev
}

// dockerSandbox is the agent's sandbox for `bcode check --sandbox docker`,
// configured by the base commit's [sandbox] (as every rule of the check
// is). The container has no network, so the module versions the base's
// go.sum lists are fetched on the host first — with the user's proxy
// settings, in an empty directory, validated, and nothing else: the head is
// a change nobody has read, and a module path it names is text it chose.
// What the head needs beyond that is listed on stderr, not fetched. The
// build cache is warmed from the base inside a container too
// (agentbackend.WarmSeed), never on the host.
func dockerSandbox(ctx context.Context, dir, base, head string, stderr io.Writer) (sandbox.Sandbox, error) {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	if base == "" {
		base, err = repo.DefaultBase(ctx)
	} else {
		base, err = repo.Resolve(ctx, base)
	}
	if err != nil {
		return nil, err
	}
	cfg, err := task.BaseConfig(ctx, repo, base)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := docker.Connect(cctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if _, err := e.Image(cctx, cfg.Sandbox.Image); err != nil {
		return nil, err
	}
	sums, err := agentbackend.BaseSums(ctx, repo.Dir, base)
	if err != nil {
		return nil, err
	}
	if err := agentbackend.FetchBaseKnown(ctx, sums); err != nil {
		return nil, fmt.Errorf("fetching the base's Go modules on the host before the offline sandbox: %w", err)
	}
	if missing := headOnlyModules(ctx, repo, head, sums); len(missing) > 0 {
		fmt.Fprintf(stderr, "bcode check: not fetching %d module version(s) the base's go.sum does not list (the sandbox is offline; fetch them yourself if you trust them): %s\n",
			len(missing), shown.Line(strings.Join(missing, " ")))
	}
	return agentbackend.NewSandbox(cfg, agentbackend.CacheOptions(), repo.Dir, base), nil
}

// headOnlyModules lists the module versions the head's go.mod and go.sum
// name that the base's go.sum does not and the module cache lacks. It
// reads the files (the working tree's through a confined read, or the head
// revision's from git) and runs nothing.
func headOnlyModules(ctx context.Context, repo *git.Repo, head string, base map[module.Version]gotool.Sum) []string {
	read := func(name string) []byte {
		var b []byte
		if head == "" {
			b, _ = sandbox.ReadFile(repo.Dir, name, 16<<20)
		} else {
			b, _ = repo.ShowFile(ctx, head, name)
		}
		return b
	}
	wanted, err := gotool.Wanted(read("go.mod"), read("go.sum"))
	if err != nil {
		return nil
	}
	tc, err := gotool.Shared(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, v := range wanted {
		if _, ok := base[v]; !ok && !tc.Cached(v, false) {
			out = append(out, gotool.String(v))
		}
	}
	return out
}
