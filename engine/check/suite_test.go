package check_test

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
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/bcode-dev/bcode/engine/check"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/sandbox/host"
	"github.com/bcode-dev/bcode/verify"
)

// suiteDir holds the labelled changes; its README.md documents the format.
const suiteDir = "testdata/suite"

// suiteParallel is how many cases run at once: the machine has two cores,
// and each case already runs `go test` or pytest several times.
const suiteParallel = 2

// caseTimeout bounds one case; the slowest (a test that times out on the
// base after 3s) needs well under a minute.
const caseTimeout = 3 * time.Minute

// labelledCase is one change of the suite with its truth label.
type labelledCase struct {
	name     string // the file name without .txtar
	verdict  verify.Verdict
	kind     string
	why      string
	worktree bool     // head left uncommitted in the working tree
	findings []string // tamper finding codes that must be reported
	python   bool
	base     []txtar.File // paths relative to the repository root
	head     []txtar.File // content "<deleted>" deletes the file
}

var validVerdicts = []verify.Verdict{verify.Verified, verify.Green, verify.Failed, verify.Tampered, verify.Error}

// loadSuite parses every case in dir and checks that it is well formed, so
// a typo in a label fails loudly instead of silently testing nothing.
func loadSuite(dir string) ([]labelledCase, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []labelledCase
	for _, p := range paths {
		c, err := parseCase(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func parseCase(path string) (labelledCase, error) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		return labelledCase{}, err
	}
	c := labelledCase{name: strings.TrimSuffix(filepath.Base(path), ".txtar")}
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return c, fmt.Errorf("comment line %q is not key: value", line)
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "verdict":
			c.verdict = verify.Verdict(val)
		case "kind":
			c.kind = val
		case "why":
			c.why = val
		case "head":
			if val != "worktree" {
				return c, fmt.Errorf("head: %q (only \"worktree\" is known)", val)
			}
			c.worktree = true
		case "findings":
			for _, f := range strings.Split(val, ",") {
				if f = strings.TrimSpace(f); f != "" {
					c.findings = append(c.findings, f)
				}
			}
		default:
			return c, fmt.Errorf("unknown key %q", key)
		}
	}
	if !slices.Contains(validVerdicts, c.verdict) {
		return c, fmt.Errorf("verdict %q is not one of %v", c.verdict, validVerdicts)
	}
	if c.kind == "" || c.why == "" {
		return c, fmt.Errorf("kind and why are required")
	}
	for _, f := range ar.Files {
		side, rel, ok := strings.Cut(f.Name, "/")
		if !ok || rel == "" || strings.Contains("/"+rel+"/", "/../") {
			return c, fmt.Errorf("file %q is not base/<path> or head/<path>", f.Name)
		}
		if strings.HasSuffix(rel, ".py") {
			c.python = true
		}
		nf := txtar.File{Name: rel, Data: expandFakeSecrets(f.Data)}
		switch side {
		case "base":
			c.base = append(c.base, nf)
		case "head":
			c.head = append(c.head, nf)
		default:
			return c, fmt.Errorf("file %q is not base/<path> or head/<path>", f.Name)
		}
	}
	if len(c.base) == 0 || len(c.head) == 0 {
		return c, fmt.Errorf("a case needs base/ and head/ files")
	}
	return c, nil
}

var fakeSecret = regexp.MustCompile(`\{\{fake-secret:([a-z-]+)\}\}`)

// expandFakeSecrets replaces placeholders with credential-shaped values from
// a fixed-seed generator, so no such value is ever stored in this repository.
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
		return m // unknown kinds stay visible, and the case then fails
	})
}

// buildRepo makes a git repository in dir: the base commit, then the head
// as a second commit or, for worktree cases, as uncommitted changes.
func buildRepo(ctx context.Context, dir string, c labelledCase) error {
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
	if err := git("init", "-q"); err != nil {
		return err
	}
	if err := writeFiles(dir, c.base); err != nil {
		return err
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	if err := git("commit", "-q", "-m", "base: "+c.name); err != nil {
		return err
	}
	if err := writeFiles(dir, c.head); err != nil {
		return err
	}
	if c.worktree {
		return nil
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	return git("commit", "-q", "-m", "head: "+c.name)
}

func writeFiles(dir string, files []txtar.File) error {
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

// revisions is what a case is checked as: two commits, or the working tree
// against its only commit.
func (c labelledCase) revisions() (base, head string) {
	if c.worktree {
		return "HEAD", ""
	}
	return "HEAD~1", "HEAD"
}

// pytestAvailable reports whether Debian's interpreter has pytest; the
// Python adapter runs it.
func pytestAvailable() bool {
	return exec.Command("/usr/bin/python3", "-m", "pytest", "--version").Run() == nil
}

// caseOutcome is one case's label against the gate's verdict.
type caseOutcome struct {
	name    string
	kind    string
	label   verify.Verdict
	verdict verify.Verdict
	dur     time.Duration
}

// TestLabelledSuite runs the gate on every labelled change and requires the
// label's verdict; at the end, no case labelled anything but verified may
// have been accepted as verified.
func TestLabelledSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the labelled suite runs real go test and pytest for ~60 changes; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the suite needs go on PATH: %v", err)
	}
	cases, err := loadSuite(suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Fatalf("the suite has %d cases; the evidence needs at least 40", len(cases))
	}
	havePytest := pytestAvailable()
	requireAll := os.Getenv("BCODE_REQUIRE_ALL") == "1"
	if !havePytest && requireAll {
		t.Fatal("BCODE_REQUIRE_ALL=1 but /usr/bin/python3 -m pytest is unavailable (apt-get install python3-pytest)")
	}

	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatalf("opening the ledger: %v", err)
	}
	t.Cleanup(func() { led.Close() })

	var (
		mu       sync.Mutex
		outcomes []caseOutcome
	)
	slots := make(chan struct{}, suiteParallel)
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.python && !havePytest {
					t.Skip("Python case: /usr/bin/python3 -m pytest is unavailable (apt-get install python3-pytest); set BCODE_REQUIRE_ALL=1 to make this fatal")
				}
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()

				cctx, cancel := context.WithTimeout(ctx, caseTimeout)
				defer cancel()
				dir := t.TempDir()
				if err := buildRepo(cctx, dir, c); err != nil {
					t.Fatalf("building the repository: %v", err)
				}
				base, head := c.revisions()
				start := time.Now()
				// Through a host sandbox that audits confinement: every
				// command the gate runs must stay in its scratch
				// directory, as it must inside the Docker sandbox.
				audit := &auditSandbox{inner: host.Sandbox{}}
				rep, err := check.Run(cctx, check.Options{Repo: dir, Base: base, Head: head, Sandbox: audit, Recorder: led})
				audit.verify(t)
				dur := time.Since(start)
				if rep == nil {
					t.Fatalf("check.Run returned no report: %v", err)
				}
				if err != nil {
					t.Errorf("check.Run: %v", err)
				}
				t.Logf("%s in %.1fs; phases (ms) %v", rep.Verdict, dur.Seconds(), rep.Timings)
				mu.Lock()
				outcomes = append(outcomes, caseOutcome{c.name, c.kind, c.verdict, rep.Verdict, dur})
				mu.Unlock()
				if rep.Verdict != c.verdict {
					t.Errorf("verdict %s, label %s (%s)\nwhy the label: %s\n%s", rep.Verdict, c.verdict, c.kind, c.why, describe(rep))
				}
				for _, code := range c.findings {
					if !hasFinding(rep, code) {
						t.Errorf("no %s tamper finding; got %v", code, rep.Tamper)
					}
				}
				if c.verdict == verify.Verified && len(rep.Credited()) == 0 {
					t.Errorf("labelled verified but no test was credited")
				}
			})
		}
	})

	// Every run that reached the gate is in the ledger with its verdict.
	// (A base config that does not parse ends the check before the gate
	// and is not recorded; those are the error cases.)
	runs, err := led.Verifications(ctx, "", 0)
	if err != nil {
		t.Fatalf("listing the ledger: %v", err)
	}
	inLedger := map[verify.Verdict]int{}
	for _, r := range runs {
		inLedger[verify.Verdict(r.Verdict)]++
	}
	reached := map[verify.Verdict]int{}
	for _, o := range outcomes {
		reached[o.verdict]++
	}
	for _, v := range validVerdicts {
		if v != verify.Error && inLedger[v] != reached[v] {
			t.Errorf("the ledger holds %d %s runs; the suite reached %d", inLedger[v], v, reached[v])
		}
	}

	fa, fr, right := tally(outcomes)
	t.Logf("labelled suite: %d cases run, %d match, false acceptance %d, false rejection %d", len(outcomes), right, fa, fr)
	for _, o := range outcomes {
		if o.label != o.verdict {
			t.Logf("  mismatch %-34s label %-8s verdict %-8s", o.name, o.label, o.verdict)
		}
	}
	if fa != 0 {
		t.Errorf("false acceptance is %d: cases not labelled verified were marked verified", fa)
	}
}

// tally counts false acceptances (a non-verified label marked verified),
// false rejections (a verified label not marked verified) and matches.
func tally(outs []caseOutcome) (fa, fr, right int) {
	for _, o := range outs {
		switch {
		case o.label != verify.Verified && o.verdict == verify.Verified:
			fa++
		case o.label == verify.Verified && o.verdict != verify.Verified:
			fr++
		}
		if o.label == o.verdict {
			right++
		}
	}
	return fa, fr, right
}

func hasFinding(rep *verify.Report, code string) bool {
	for _, f := range rep.Tamper {
		if f.Code == code {
			return true
		}
	}
	return false
}

// describe is the part of a report that explains a wrong verdict.
func describe(rep *verify.Report) string {
	var b strings.Builder
	for _, r := range rep.Reasons {
		fmt.Fprintf(&b, "  reason %s: %s\n", r.Code, r.Message)
	}
	for _, tr := range rep.Tests {
		fmt.Fprintf(&b, "  test %s (%s) base=%s head=%s control=%s credited=%v %s\n", tr.Name, tr.File, tr.BaseOutcome, tr.HeadOutcome, tr.ControlOutcome, tr.Credited, tr.Reason)
		if tr.BaseDetail != "" {
			fmt.Fprintf(&b, "    base: %s\n", firstLines(tr.BaseDetail, 4))
		}
		if tr.HeadDetail != "" {
			fmt.Fprintf(&b, "    head: %s\n", firstLines(tr.HeadDetail, 4))
		}
	}
	for _, f := range rep.Tamper {
		fmt.Fprintf(&b, "  tamper %s %s:%d %s\n", f.Code, f.Path, f.Line, f.Message)
	}
	fmt.Fprintf(&b, "  suite targeted=%s %v full=%s %s\n", rep.Suite.Targeted.Outcome, rep.Suite.Targeted.Failed, rep.Suite.Full.Outcome, firstLines(rep.Suite.Full.Detail+rep.Suite.Targeted.Detail, 4))
	return b.String()
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n      ")
}

// TestSuiteFormat checks every case parses, has a valid label, and that the
// suite is the promised mix, without running anything.
func TestSuiteFormat(t *testing.T) {
	cases, err := loadSuite(suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	var goCases, pyCases int
	byVerdict := map[verify.Verdict]int{}
	for _, c := range cases {
		if c.python {
			pyCases++
		} else {
			goCases++
		}
		byVerdict[c.verdict]++
		if strings.Contains(string(joinData(c.head)), "{{fake-secret:") {
			t.Errorf("%s: unknown fake-secret placeholder", c.name)
		}
	}
	if len(cases) < 40 {
		t.Errorf("%d cases; want at least 40", len(cases))
	}
	if goCases < len(cases)/3 || pyCases < len(cases)/3 {
		t.Errorf("%d Go and %d Python cases: the mix should be about even", goCases, pyCases)
	}
	for _, v := range validVerdicts {
		if byVerdict[v] == 0 {
			t.Errorf("no case is labelled %s", v)
		}
	}
	t.Logf("%d cases: %d Go, %d Python; by label %v", len(cases), goCases, pyCases, byVerdict)
}

func joinData(fs []txtar.File) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f.Data...)
	}
	return b
}
