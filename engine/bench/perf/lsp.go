package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/server/lsp"
)

func init() {
	register(benchmark{
		name:    "lsp",
		summary: "bcode-ls: code-action and bcode/tasks latency, resident memory on a large repo, save-to-diagnostics time",
		run:     benchLSP,
	})
}

// benchLSP drives a real bcode-ls child process over stdio, as an editor
// does, and measures what a person feels: how fast code actions and the
// task list answer, how much memory the server holds while serving a large
// repository, and how long a save takes to turn into diagnostics.
func benchLSP(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	o, ok := parseLSPFlags(args, stderr)
	if !ok {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "bcode bench perf lsp: "+format+"\n", a...)
		return 1
	}
	ls, err := findLS(o.serverPath)
	if err != nil {
		return fail("%v", err)
	}
	work, err := os.MkdirTemp("", "bcode-bench-lsp-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(work)
	if o.repo == "" {
		if o.repo, err = materializeLarge(ctx, o, work, stderr); err != nil {
			return fail("%v", err)
		}
	}
	lines, files := goLines(o.repo)
	state := filepath.Join(work, "state")
	if err := seedTasks(ctx, state, o.repo, 20); err != nil {
		return fail("seeding the ledger: %v", err)
	}

	// The large repository: latency and memory. Its server stays up while
	// the small repository's saves are timed.
	srv, err := startLS(ctx, ls, state)
	if err != nil {
		return fail("%v", err)
	}
	defer srv.stop()
	res, err := measureLarge(ctx, srv, o)
	if err != nil {
		return fail("%v", err)
	}
	if o.bigEvidence > 0 {
		res.bigRun, res.bigNote = bigEvidenceRun(ctx, srv, o.bigEvidence)
		_, res.hwm = srv.memory()
	}

	// Save to diagnostics on a small repository with a surviving mutant.
	small := filepath.Join(work, "small")
	if err := smallRepo(small); err != nil {
		return fail("small repository: %v", err)
	}
	if res.saveTimes, err = timeSaves(ctx, ls, state, small, o.saves); err != nil {
		return fail("save to diagnostics: %v", err)
	}
	printLSP(stdout, o, res, lines, files)
	return 0
}

// lspOptions are benchLSP's flags.
type lspOptions struct {
	repo, module, materialize, serverPath string
	n, saves                              int
	bigEvidence                           time.Duration
}

func parseLSPFlags(args []string, stderr io.Writer) (lspOptions, bool) {
	fs := flag.NewFlagSet("bcode bench perf lsp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o lspOptions
	fs.StringVar(&o.repo, "repo", "", "a large Go repository to serve (default: materialize --module)")
	fs.StringVar(&o.module, "module", "golang.org/x/sys v0.49.0 v0.50.0", "MODULE BASE HEAD to materialize when --repo is not given")
	fs.StringVar(&o.materialize, "materialize", "/work/shared/corpus/materialize", "the corpus materialize script")
	fs.StringVar(&o.serverPath, "server", "", "the bcode-ls binary (default: next to bcode, else on PATH)")
	fs.IntVar(&o.n, "n", 200, "requests per latency measurement")
	fs.IntVar(&o.saves, "saves", 3, "saves timed on the small repository")
	fs.DurationVar(&o.bigEvidence, "big-evidence", 0, "also time an evidence run on the large repository's change, giving up after this long (0: skip)")
	return o, fs.Parse(args) == nil
}

// materializeLarge makes the --module change a repository under work.
func materializeLarge(ctx context.Context, o lspOptions, work string, stderr io.Writer) (string, error) {
	parts := strings.Fields(o.module)
	if len(parts) != 3 {
		return "", fmt.Errorf("--module wants MODULE BASE HEAD, got %q", o.module)
	}
	repo := filepath.Join(work, "big")
	fmt.Fprintf(stderr, "materializing %s\n", o.module)
	if out, err := exec.CommandContext(ctx, o.materialize, parts[0], parts[1], parts[2], repo).CombinedOutput(); err != nil {
		return "", fmt.Errorf("materialize: %v\n%s", err, out)
	}
	return repo, nil
}

// lspResults are what benchLSP measured.
type lspResults struct {
	file           string // the file served, relative to the repository
	nLines         int
	codeActions    []time.Duration // on the cold index
	codeActionsHot []time.Duration // after a pack
	tasks          []time.Duration
	saveTimes      []time.Duration
	packTime       time.Duration
	packTokens     int
	rssIdle, hwm   float64
	bigRun         time.Duration
	bigNote        string
	loadStart      string // load average when the large repository's requests began
	loadEnd        string // and after its pack
}

// measureLarge opens the largest file of the large repository in srv and
// times code actions, the task list and a first pack, then reads the
// server's memory.
func measureLarge(ctx context.Context, srv *lsChild, o lspOptions) (*lspResults, error) {
	if err := srv.initialize(ctx, o.repo); err != nil {
		return nil, fmt.Errorf("initialize: %v", err)
	}
	res := &lspResults{file: pickFile(o.repo), loadStart: loadAverage()}
	if res.file == "" {
		return nil, fmt.Errorf("no Go file in %s", o.repo)
	}
	text, err := os.ReadFile(filepath.Join(o.repo, res.file))
	if err != nil {
		return nil, err
	}
	uri := lsp.FileURI(filepath.Join(o.repo, res.file))
	if err := srv.Conn.Notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": lsp.TextDocumentItem{
		URI: uri, LanguageID: "go", Version: 1, Text: string(text)}}); err != nil {
		return nil, err
	}
	res.nLines = strings.Count(string(text), "\n") + 1
	rng := rand.New(rand.NewPCG(1, 2))
	if res.codeActions, err = measure(o.n, func() error {
		l := uint32(rng.IntN(res.nLines))
		return codeActionsAt(ctx, srv, uri, lsp.Range{Start: lsp.Position{Line: l}, End: lsp.Position{Line: l + uint32(rng.IntN(3))}})
	}); err != nil {
		return nil, fmt.Errorf("code actions: %v", err)
	}
	if res.tasks, err = measure(o.n, func() error { return listSeededTasks(ctx, srv) }); err != nil {
		return nil, fmt.Errorf("bcode/tasks: %v", err)
	}
	if res.packTime, res.packTokens, err = firstPack(ctx, srv, uri, res.nLines); err != nil {
		return nil, fmt.Errorf("bcode/contextPack: %v", err)
	}
	// Code actions while the index is warm and the server idle again.
	if res.codeActionsHot, err = measure(o.n, func() error {
		l := uint32(rng.IntN(res.nLines))
		return codeActionsAt(ctx, srv, uri, lsp.Range{Start: lsp.Position{Line: l}, End: lsp.Position{Line: l}})
	}); err != nil {
		return nil, fmt.Errorf("code actions: %v", err)
	}
	res.rssIdle, res.hwm = srv.memory()
	res.loadEnd = loadAverage()
	return res, nil
}

func codeActionsAt(ctx context.Context, srv *lsChild, uri string, r lsp.Range) error {
	var out []lsp.CodeAction
	return srv.Conn.Call(ctx, "textDocument/codeAction", map[string]any{
		"textDocument": map[string]any{"uri": uri}, "range": r,
		"context": map[string]any{"diagnostics": []any{}}}, &out)
}

// listSeededTasks asks for the task list and checks it holds the 20 tasks
// seedTasks wrote.
func listSeededTasks(ctx context.Context, srv *lsChild) error {
	var out struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := srv.Conn.Call(ctx, "bcode/tasks", map[string]any{}, &out); err != nil {
		return err
	}
	if len(out.Tasks) != 20 {
		return fmt.Errorf("bcode/tasks listed %d tasks, want the 20 seeded", len(out.Tasks))
	}
	return nil
}

// firstPack times the first pack of six lines in the middle of the file,
// which indexes the repository.
func firstPack(ctx context.Context, srv *lsChild, uri string, nLines int) (time.Duration, int, error) {
	start := time.Now()
	var pack struct {
		Total int `json:"total"`
	}
	l := uint32(nLines / 2)
	err := srv.Conn.Call(ctx, "bcode/contextPack", map[string]any{"uri": uri,
		"range": lsp.Range{Start: lsp.Position{Line: l}, End: lsp.Position{Line: l + 5}}}, &pack)
	return time.Since(start), pack.Total, err
}

// bigEvidenceRun times evidence on the large repository's last commit,
// giving up after limit, and says how it ended.
func bigEvidenceRun(ctx context.Context, srv *lsChild, limit time.Duration) (time.Duration, string) {
	bctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	var rep struct {
		State   string            `json:"state"`
		Error   string            `json:"error"`
		Mutants []json.RawMessage `json:"mutants"`
	}
	err := srv.Conn.Call(bctx, "workspace/executeCommand", map[string]any{"command": "bcode.evidence.run", "arguments": []any{map[string]any{"base": "HEAD~1"}}}, nil)
	if err == nil {
		err = srv.Conn.Call(bctx, "bcode/evidence", map[string]any{"wait": true}, &rep)
	}
	took := time.Since(start)
	switch {
	case err != nil:
		return took, "did not finish: " + err.Error()
	case rep.State != "done":
		return took, rep.State + ": " + rep.Error
	}
	return took, fmt.Sprintf("%d mutants", len(rep.Mutants))
}

func printLSP(stdout io.Writer, o lspOptions, res *lspResults, lines, files int) {
	fmt.Fprintf(stdout, "bcode-ls on %s: %d lines of Go in %d files (serving %s, %d lines)\n\n", o.repo, lines, files, res.file, res.nLines)
	fmt.Fprintln(stdout, "| measurement | p50 | p99 | n |")
	fmt.Fprintln(stdout, "|---|---|---|---|")
	row := func(name string, ds []time.Duration) {
		fmt.Fprintf(stdout, "| %s | %s | %s | %d |\n", name, percentile(ds, 50), percentile(ds, 99), len(ds))
	}
	row("textDocument/codeAction (cold index)", res.codeActions)
	row("textDocument/codeAction (after a pack)", res.codeActionsHot)
	row("bcode/tasks (20 tasks)", res.tasks)
	row("save → diagnostics (small repo, warm cache)", res.saveTimes)
	fmt.Fprintf(stdout, "\n| memory of bcode-ls | MiB |\n|---|---|\n| RSS serving the large repo (idle, after the requests and a pack) | %.1f |\n| peak RSS (VmHWM) | %.1f |\n", res.rssIdle, res.hwm)
	fmt.Fprintf(stdout, "\nbcode/contextPack on the large repo (first, indexing it): %s, %d tokens\n", res.packTime.Round(time.Millisecond), res.packTokens)
	fmt.Fprintf(stdout, "load average (1, 5, 15 min) while serving the large repo: %s at start, %s after its pack\n", res.loadStart, res.loadEnd)
	if o.bigEvidence > 0 {
		fmt.Fprintf(stdout, "evidence on the large repo's change (HEAD~1..HEAD): %s (%s)\n", res.bigRun.Round(time.Second), res.bigNote)
	}
}

func findLS(flagPath string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "bcode-ls")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("bcode-ls"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("bcode-ls not found next to bcode or on PATH: build it with `go install ./cmd/...` or pass --server")
}

func measure(n int, f func() error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

func percentile(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "-"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	d := s[i]
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return d.Round(10 * time.Millisecond).String()
}

func goLines(dir string) (lines, files int) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			b, err := os.ReadFile(p)
			if err == nil {
				files++
				lines += strings.Count(string(b), "\n")
			}
		}
		return nil
	})
	return lines, files
}

// pickFile is the largest changed non-test Go file of HEAD when it is a
// real file (over 8 KiB), else the largest Go file under 200 KiB.
func pickFile(dir string) string {
	out, _ := exec.Command("git", "-C", dir, "diff", "--name-only", "HEAD~1", "HEAD", "--", "*.go").Output()
	changed, csize := "", int64(0)
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasSuffix(f, "_test.go") {
			if fi, err := os.Stat(filepath.Join(dir, f)); err == nil && fi.Size() > csize && fi.Size() < 200<<10 {
				changed, csize = f, fi.Size()
			}
		}
	}
	if csize > 8<<10 {
		return changed // the largest changed file, if it is not a stub
	}
	best, size := "", int64(0)
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			if fi, err := d.Info(); err == nil && fi.Size() > size && fi.Size() < 200<<10 {
				best, size = p, fi.Size()
			}
		}
		return nil
	})
	if best == "" {
		return ""
	}
	rel, _ := filepath.Rel(dir, best)
	return filepath.ToSlash(rel)
}

func seedTasks(ctx context.Context, state, repo string, n int) error {
	led, err := ledger.Open(ctx, filepath.Join(state, "ledger.db"))
	if err != nil {
		return err
	}
	defer led.Close()
	abs, _ := filepath.EvalSymlinks(repo)
	if abs == "" {
		abs = repo
	}
	for i := 0; i < n; i++ {
		t := &engine.Task{ID: ledger.NewTaskID(), Repo: abs, Goal: fmt.Sprintf("benchmark task %d", i), Base: "HEAD", Status: engine.TaskQueued}
		t.Branch = "bcode/" + t.ID
		if err := led.CreateTask(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// lsChild is a bcode-ls child process and the client end of its stdio.
type lsChild struct {
	*lsp.Child
}

func startLS(ctx context.Context, path, state string, extra ...string) (*lsChild, error) {
	child, err := lsp.StartChild(ctx, path, lsp.ChildOptions{Args: append([]string{"--stdio"}, extra...), Env: []string{"BCODE_STATE=" + state}})
	if err != nil {
		return nil, err
	}
	return &lsChild{Child: child}, nil
}

func (c *lsChild) initialize(ctx context.Context, root string) error {
	_, err := c.Initialize(ctx, lsp.ToolInitialize(root, "bcode bench perf"))
	return err
}

// memory reads the child's resident set and its peak, in MiB.
func (c *lsChild) memory() (rss, hwm float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.Process().Pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}

func (c *lsChild) stop() { c.Stop(10 * time.Second) }

const smallGo = `package price

// Discount returns the discount in percent for a basket of n items.
func Discount(n int) int {
	if n >= 10 {
		return 5
	}
	return 0
}
`

const smallTest = `package price

import "testing"

func TestDiscount(t *testing.T) {
	if Discount(20) != 5 {
		t.Fatal("20 items get 5%")
	}
	if Discount(1) != 0 {
		t.Fatal("1 item gets nothing")
	}
}
`

func smallRepo(dir string) error {
	files := map[string]string{"go.mod": "module example.com/shop\n\ngo 1.22\n", "price/price.go": smallGo, "price/price_test.go": smallTest}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@localhost", "commit", "-qm", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	return nil
}

// timeSaves alternates the file between a change with a surviving mutant
// and no change, timing each save until the diagnostics show it. The first
// run fills the baseline cache and is not counted.
func timeSaves(ctx context.Context, ls, state, dir string, n int) ([]time.Duration, error) {
	srv, err := startLS(ctx, ls, state, "--no-watch", "--debounce", "50ms")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	if err := srv.initialize(ctx, dir); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, "price", "price.go")
	uri := lsp.FileURI(p)
	if err := srv.Conn.Notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": lsp.TextDocumentItem{URI: uri, LanguageID: "go", Version: 1, Text: smallGo}}); err != nil {
		return nil, err
	}
	changed := strings.Replace(smallGo, "n >= 10", "n > 10", 1)
	hasWarning := func(ds []lsp.Diagnostic) bool {
		for _, d := range ds {
			if d.Severity == lsp.SeverityWarning {
				return true
			}
		}
		return false
	}
	var out []time.Duration
	version := int32(1)
	for i := 0; i <= 2*n; i++ {
		text, want := changed, true
		if i%2 == 1 {
			text, want = smallGo, false
		}
		version++
		if err := srv.Conn.Notify(ctx, "textDocument/didChange", map[string]any{
			"textDocument": map[string]any{"uri": uri, "version": version}, "contentChanges": []map[string]any{{"text": text}}}); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := srv.Conn.Notify(ctx, "textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": uri}}); err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		_, err := srv.AwaitDiagnostics(wctx, uri, "the diagnostics of the save", func(ds []lsp.Diagnostic) bool { return hasWarning(ds) == want })
		cancel()
		if err != nil {
			return nil, fmt.Errorf("save %d: %v", i, err)
		}
		if i > 0 && want {
			out = append(out, time.Since(start))
		}
		// Let the run finish before the next save, so each save is timed
		// alone (a newer save would cancel it).
		var rep json.RawMessage
		if err := srv.Conn.Call(ctx, "bcode/evidence", map[string]any{"wait": true}, &rep); err != nil {
			return nil, err
		}
	}
	return out, nil
}
