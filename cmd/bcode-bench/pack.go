package main

// The pack benchmark: co-change recall of `bcode pack` on real changes of
// real Go modules against two grep baselines at the same token budgets, and
// pack time on a warm index of a large repository with index build time
// and memory.
//
// For each change (two released versions of a module, materialized as a
// two-commit git repository) that modifies at least two .go files that
// exist on the base, the pack is built on the base commit with the
// selection = the base version of the changed function with the most
// changed lines; recall is the share of the other modified files (and of
// the other changed functions) that the output contains.

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify/secrets"
)

func init() {
	register(benchmark{
		name:    "pack",
		summary: "co-change recall of context packs vs grep baselines at 1k/4k/8k tokens; warm pack time on a large repository",
		run:     runPackBench,
	})
}

// extraChanges are real release pairs added to the shared corpus: each
// edits several .go files.
var extraChanges = [][3]string{
	{"github.com/spf13/cobra", "v1.8.1", "v1.9.0"},
	{"github.com/spf13/cobra", "v1.9.1", "v1.10.0"},
	{"github.com/spf13/pflag", "v1.0.6", "v1.0.7"},
	{"github.com/google/uuid", "v1.4.0", "v1.5.0"},
	{"github.com/hashicorp/go-version", "v1.7.0", "v1.8.0"},
	{"github.com/Masterminds/semver/v3", "v3.3.1", "v3.4.0"},
	{"github.com/pelletier/go-toml/v2", "v2.2.3", "v2.2.4"},
	{"github.com/fsnotify/fsnotify", "v1.8.0", "v1.9.0"},
	{"github.com/BurntSushi/toml", "v1.4.0", "v1.5.0"},
	{"github.com/tidwall/gjson", "v1.17.0", "v1.17.1"},
	{"github.com/mattn/go-runewidth", "v0.0.15", "v0.0.16"},
	{"golang.org/x/sync", "v0.10.0", "v0.11.0"},
}

var budgets = []int{1000, 4000, 8000}

func runPackBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode-bench pack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	corpus := fs.String("corpus", "../shared/corpus", "directory holding go-changes.tsv and materialize")
	work := fs.String("work", "", "directory to materialize changes in (default: a temporary one, removed after)")
	big := fs.String("big", "golang.org/x/crypto@v0.35.0", "module@version of the large repository for warm-index timing (\"\" to skip)")
	tokenizer := fs.String("tokenizer", "", "a /tokenize endpoint to count with instead of the estimate (e.g. llama-server)")
	limit := fs.Int("limit", 0, "use at most this many changes (0: all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dir := *work
	if dir == "" {
		d, err := os.MkdirTemp("", "bcode-bench-pack-")
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer os.RemoveAll(d)
		dir = d
	}
	scanner, err := secrets.NewScanner()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var counter pack.Counter = pack.Estimate{}
	if *tokenizer != "" {
		c, note := pack.NewCounter(ctx, *tokenizer, 2*time.Second)
		fmt.Fprintln(stderr, note)
		counter = c
	}
	changes, err := readCorpus(filepath.Join(*corpus, "go-changes.tsv"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	changes = append(changes, extraChanges...)
	if *limit > 0 && len(changes) > *limit {
		changes = changes[:*limit]
	}

	var results []changeResult
	for i, ch := range changes {
		if ctx.Err() != nil {
			return 1
		}
		repo := filepath.Join(dir, fmt.Sprintf("c%02d", i))
		r, err := benchChange(ctx, filepath.Join(*corpus, "materialize"), ch, repo, counter, scanner)
		if err != nil {
			fmt.Fprintf(stderr, "skip %s %s..%s: %v\n", ch[0], ch[1], ch[2], err)
			continue
		}
		fmt.Fprintf(stderr, "%s %s..%s: selection %s, %d other files, %d other functions, index %s\n",
			ch[0], ch[1], ch[2], r.selection, r.targets, r.targetFuncs, r.index.Round(time.Millisecond))
		results = append(results, r)
	}
	printRecall(stdout, results)

	if *big != "" {
		if err := benchWarm(ctx, *big, filepath.Join(dir, "big"), counter, scanner, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "warm-index benchmark: %v\n", err)
			return 1
		}
	}
	return 0
}

func readCorpus(path string) ([][3]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][3]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) >= 3 {
			out = append(out, [3]string{f[0], f[1], f[2]})
		}
	}
	return out, sc.Err()
}

// scores are one method's numbers at one budget.
type scores struct {
	fileRecall, funcRecall float64
	tokens                 int
	elapsed                time.Duration
}

type changeResult struct {
	name                 string
	selection            string
	targets, targetFuncs int
	index                time.Duration
	// method → budget → scores
	by map[string]map[int]scores
}

var methods = []string{"bcode pack", "grep lines", "grep whole files"}

// changedFunc is a function of the base that the change edits.
type changedFunc struct {
	file, name   string
	start, end   int
	changedLines int
	isTest       bool
}

func benchChange(ctx context.Context, materialize string, ch [3]string, repo string, counter pack.Counter, red pack.Redactor) (changeResult, error) {
	r := changeResult{name: ch[0] + " " + ch[1] + ".." + ch[2], by: map[string]map[int]scores{}}
	if out, err := exec.CommandContext(ctx, materialize, ch[0], ch[1], ch[2], repo).CombinedOutput(); err != nil {
		return r, fmt.Errorf("materialize: %v: %s", err, strings.TrimSpace(string(out)))
	}
	// Base-side line ranges of every modified .go file.
	diff, err := gitOut(ctx, repo, "diff", "-U0", "--no-renames", "--diff-filter=M", "HEAD~1", "HEAD", "--", "*.go")
	if err != nil {
		return r, err
	}
	hunks := baseHunks(diff)
	if len(hunks) < 2 {
		return r, fmt.Errorf("modifies %d existing .go file(s), need 2", len(hunks))
	}
	if _, err := gitOut(ctx, repo, "checkout", "-q", "HEAD~1"); err != nil {
		return r, err
	}
	var funcs []changedFunc
	for file, ranges := range hunks {
		funcs = append(funcs, changedFuncs(filepath.Join(repo, file), file, ranges)...)
	}
	slices.SortFunc(funcs, func(a, b changedFunc) int {
		// The selection: a non-test function with the most changed lines.
		return cmp.Or(boolCmp(a.isTest, b.isTest), cmp.Compare(b.changedLines, a.changedLines), cmp.Compare(a.file, b.file), cmp.Compare(a.start, b.start))
	})
	if len(funcs) == 0 || funcs[0].isTest {
		return r, fmt.Errorf("no non-test function changed")
	}
	sel := funcs[0]
	r.selection = fmt.Sprintf("%s:%d-%d (%s)", sel.file, sel.start, sel.end, sel.name)
	var targetFiles []string
	for f := range hunks {
		if f != sel.file {
			targetFiles = append(targetFiles, f)
		}
	}
	slices.Sort(targetFiles)
	targetFuncs := append([]changedFunc(nil), funcs[1:]...)
	r.targets, r.targetFuncs = len(targetFiles), len(targetFuncs)

	start := time.Now()
	g, _, err := codegraph.Index(ctx, repo, nil)
	if err != nil {
		return r, fmt.Errorf("index: %w", err)
	}
	r.index = time.Since(start)

	conf, err := sandbox.OpenConfined(repo)
	if err != nil {
		return r, err
	}
	defer conf.Close()
	selText, err := conf.ReadFile(sel.file, 0)
	if err != nil {
		return r, err
	}
	lines := strings.Split(string(selText), "\n")
	idents := selectionIdentifiers(strings.Join(lines[sel.start-1:min(sel.end, len(lines))], "\n"))
	ranked, err := grepRank(conf, idents)
	if err != nil {
		return r, err
	}

	for _, budget := range budgets {
		t0 := time.Now()
		p, err := pack.Build(ctx, pack.Input{
			Repo: repo, Graph: g, Budget: budget, Counter: counter, Redactor: red,
			Selection: &pack.Selection{File: sel.file, StartLine: sel.start, EndLine: sel.end},
		})
		if err != nil {
			return r, fmt.Errorf("pack: %w", err)
		}
		el := time.Since(t0)
		text := pack.Render(p)
		r.add("bcode pack", budget, score(p.Files(), text, targetFiles, targetFuncs, p.Total, el))

		t0 = time.Now()
		files, text, n := grepLines(ctx, conf, ranked, idents, budget, counter)
		r.add("grep lines", budget, score(files, text, targetFiles, targetFuncs, n, time.Since(t0)))

		t0 = time.Now()
		files, text, n = grepWholeFiles(ctx, conf, ranked, budget, counter)
		r.add("grep whole files", budget, score(files, text, targetFiles, targetFuncs, n, time.Since(t0)))
	}
	return r, nil
}

func (r *changeResult) add(method string, budget int, s scores) {
	if r.by[method] == nil {
		r.by[method] = map[int]scores{}
	}
	r.by[method][budget] = s
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

var hunkRe = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@`)

// baseHunks maps each modified file to its base-side changed line ranges
// (a pure insertion counts as the line it follows).
func baseHunks(diff string) map[string][][2]int {
	out := map[string][][2]int{}
	var file string
	for _, line := range strings.Split(diff, "\n") {
		if rest, ok := strings.CutPrefix(line, "--- a/"); ok {
			file = rest
			continue
		}
		m := hunkRe.FindStringSubmatch(line)
		if m == nil || file == "" {
			continue
		}
		start, _ := strconv.Atoi(m[1])
		n := 1
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		if n == 0 {
			out[file] = append(out[file], [2]int{max(start, 1), max(start, 1)})
		} else {
			out[file] = append(out[file], [2]int{start, start + n - 1})
		}
	}
	return out
}

// changedFuncs lists the functions of a base file that changed ranges touch.
func changedFuncs(path, rel string, ranges [][2]int) []changedFunc {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil
	}
	var out []changedFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		start := fset.Position(fd.Pos()).Line
		if fd.Doc != nil {
			start = fset.Position(fd.Doc.Pos()).Line
		}
		end := fset.Position(fd.End()).Line
		n := 0
		for _, r := range ranges {
			lo, hi := max(r[0], start), min(r[1], end)
			if lo <= hi {
				n += hi - lo + 1
			}
		}
		if n == 0 {
			continue
		}
		out = append(out, changedFunc{file: rel, name: fd.Name.Name, start: start, end: end, changedLines: n, isTest: strings.HasSuffix(rel, "_test.go")})
	}
	return out
}

var benchIdentRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

var goWords = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true, "defer": true,
	"else": true, "fallthrough": true, "for": true, "func": true, "go": true, "goto": true, "if": true,
	"import": true, "interface": true, "map": true, "package": true, "range": true, "return": true,
	"select": true, "struct": true, "switch": true, "type": true, "var": true, "nil": true, "true": true,
	"false": true, "string": true, "int": true, "bool": true, "byte": true, "rune": true, "error": true,
	"len": true, "cap": true, "make": true, "new": true, "append": true, "err": true, "int64": true, "uint64": true,
}

// selectionIdentifiers are the baseline's search terms: the identifiers of
// the selected function, minus keywords, builtins and one-letter names.
func selectionIdentifiers(text string) []string {
	set := map[string]bool{}
	for _, w := range benchIdentRe.FindAllString(text, -1) {
		if len(w) > 1 && !goWords[w] {
			set[w] = true
		}
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

type grepHit struct {
	file  string
	hits  int
	lines []int
}

// grepRank ranks the repository's .go files by whole-word hits of idents.
func grepRank(conf *sandbox.Confined, idents []string) ([]grepHit, error) {
	if len(idents) == 0 {
		return nil, nil
	}
	q := make([]string, len(idents))
	for i, id := range idents {
		q[i] = regexp.QuoteMeta(id)
	}
	re := regexp.MustCompile(`\b(?:` + strings.Join(q, "|") + `)\b`)
	var out []grepHit
	root := conf.Dir()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		data, err := conf.ReadFile(rel, 0)
		if err != nil {
			return nil
		}
		h := grepHit{file: rel}
		for i, line := range strings.Split(string(data), "\n") {
			if n := len(re.FindAllStringIndex(line, -1)); n > 0 {
				h.hits += n
				h.lines = append(h.lines, i+1)
			}
		}
		if h.hits > 0 {
			out = append(out, h)
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b grepHit) int { return cmp.Or(cmp.Compare(b.hits, a.hits), cmp.Compare(a.file, b.file)) })
	return out, err
}

func countTokens(ctx context.Context, c pack.Counter, text string) int {
	n, err := c.Count(ctx, text)
	if err != nil {
		return pack.EstimateTokens(text)
	}
	return n
}

// grepLines is baseline 1: `grep -n` output of the identifiers, files in
// rank order, as many lines as the budget holds.
func grepLines(ctx context.Context, conf *sandbox.Confined, ranked []grepHit, idents []string, budget int, c pack.Counter) ([]string, string, int) {
	var b strings.Builder
	files := map[string]bool{}
	used := 0
	for _, h := range ranked {
		data, err := conf.ReadFile(h.file, 0)
		if err != nil {
			continue
		}
		lines := strings.Split(string(data), "\n")
		for _, n := range h.lines {
			line := fmt.Sprintf("%s:%d: %s\n", h.file, n, strings.TrimSpace(lines[n-1]))
			cost := pack.EstimateTokens(line)
			if used+cost > budget {
				return sortedKeys(files), b.String(), countTokens(ctx, c, b.String())
			}
			b.WriteString(line)
			used += cost
			files[h.file] = true
		}
	}
	return sortedKeys(files), b.String(), countTokens(ctx, c, b.String())
}

// grepWholeFiles is baseline 2: whole files in grep rank order, each one
// that still fits.
func grepWholeFiles(ctx context.Context, conf *sandbox.Confined, ranked []grepHit, budget int, c pack.Counter) ([]string, string, int) {
	var b strings.Builder
	files := map[string]bool{}
	used := 0
	for _, h := range ranked {
		data, err := conf.ReadFile(h.file, 0)
		if err != nil {
			continue
		}
		chunk := "// " + h.file + "\n" + string(data) + "\n"
		cost := pack.EstimateTokens(chunk)
		if used+cost > budget {
			continue
		}
		b.WriteString(chunk)
		used += cost
		files[h.file] = true
	}
	return sortedKeys(files), b.String(), countTokens(ctx, c, b.String())
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// score computes recall: a target file counts when the output shows it; a
// target function when its file is shown and its name appears as a word.
func score(files []string, text string, targetFiles []string, targetFuncs []changedFunc, tokens int, el time.Duration) scores {
	s := scores{tokens: tokens, elapsed: el, fileRecall: 1, funcRecall: 1}
	shown := map[string]bool{}
	for _, f := range files {
		shown[f] = true
	}
	if len(targetFiles) > 0 {
		hit := 0
		for _, f := range targetFiles {
			if shown[f] {
				hit++
			}
		}
		s.fileRecall = float64(hit) / float64(len(targetFiles))
	}
	if len(targetFuncs) > 0 {
		hit := 0
		for _, f := range targetFuncs {
			if shown[f.file] && regexp.MustCompile(`\b`+regexp.QuoteMeta(f.name)+`\b`).MatchString(text) {
				hit++
			}
		}
		s.funcRecall = float64(hit) / float64(len(targetFuncs))
	}
	return s
}

func printRecall(w io.Writer, results []changeResult) {
	fmt.Fprintf(w, "\nCo-change recall on %d real changes (each edits >= 2 existing .go files)\n\n", len(results))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| budget\t| method\t| file recall (mean)\t| function recall (mean)\t| changes with file recall 1.0\t| tokens (mean)\t| time (mean)\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, b := range budgets {
		for _, m := range methods {
			var fr, fnr, tok float64
			var el time.Duration
			full := 0
			for _, r := range results {
				s := r.by[m][b]
				fr += s.fileRecall
				fnr += s.funcRecall
				tok += float64(s.tokens)
				el += s.elapsed
				if s.fileRecall == 1 {
					full++
				}
			}
			n := float64(max(len(results), 1))
			fmt.Fprintf(tw, "| %d\t| %s\t| %.2f\t| %.2f\t| %d/%d\t| %.0f\t| %s\t|\n", b, m, fr/n, fnr/n, full, len(results), tok/n, (el / time.Duration(max(len(results), 1))).Round(100*time.Microsecond))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nPer change, file recall at 1k / 4k / 8k (bcode pack | grep lines | grep whole files):\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| change\t| selection\t| other files\t| bcode pack\t| grep lines\t| grep whole files\t| index\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, r := range results {
		cells := make([]string, len(methods))
		for i, m := range methods {
			var parts []string
			for _, b := range budgets {
				parts = append(parts, fmt.Sprintf("%.2f", r.by[m][b].fileRecall))
			}
			cells[i] = strings.Join(parts, " / ")
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %d\t| %s\t| %s\t| %s\t| %s\t|\n", r.name, r.selection, r.targets, cells[0], cells[1], cells[2], r.index.Round(time.Millisecond))
	}
	tw.Flush()
}

// benchWarm indexes a large module once (cold, into a real ledger), then
// times packs on the warm index: through the ledger as a CLI run does
// (scan hashes, load, assemble, pack) and with the graph in memory as
// bcode-ls holds it.
func benchWarm(ctx context.Context, modVersion, dir string, counter pack.Counter, red pack.Redactor, stdout, stderr io.Writer) error {
	mod, version, ok := strings.Cut(modVersion, "@")
	if !ok {
		return fmt.Errorf("--big %q: want module@version", modVersion)
	}
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod+"@"+version).Output()
	if err != nil {
		return fmt.Errorf("go mod download %s: %w", modVersion, err)
	}
	m := regexp.MustCompile(`"Dir": "([^"]+)"`).FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("go mod download %s: no Dir", modVersion)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-R", string(m[1]), dir).CombinedOutput(); err != nil {
		return fmt.Errorf("copy: %v: %s", err, out)
	}
	_ = exec.Command("chmod", "-R", "u+w", dir).Run()
	if _, err := gitOut(ctx, dir, "init", "-q"); err != nil {
		return err
	}
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return err
	}
	gomod, _ := conf.ReadFile("go.mod", 0)
	scan, err := codegraph.ScanTree(conf, gomod)
	conf.Close()
	if err != nil {
		return err
	}
	goLines := 0
	for d := range scan.Hashes {
		ents, _ := os.ReadDir(filepath.Join(dir, d))
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".go") {
				data, _ := os.ReadFile(filepath.Join(dir, d, e.Name()))
				goLines += strings.Count(string(data), "\n")
			}
		}
	}

	led, err := ledger.Open(ctx, filepath.Join(dir, ".bcode-bench-ledger.db"), ledger.WithMigrations("codegraph", codegraph.Migrations))
	if err != nil {
		return err
	}
	defer led.Close()
	store := codegraph.SQLStore{DB: led}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	g, st, err := codegraph.Index(ctx, dir, store)
	if err != nil {
		return err
	}
	cold := time.Since(t0)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	runtime.GC()
	var live runtime.MemStats
	runtime.ReadMemStats(&live)
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)

	// Selections: the five functions with the most callers, a realistic
	// worst case for the neighbourhood walk.
	type cand struct {
		s *codegraph.Symbol
		n int
	}
	var cands []cand
	for _, id := range g.IDs() {
		s := g.Symbols[id]
		if s.Kind == codegraph.KindFunc || s.Kind == codegraph.KindMethod {
			if !strings.HasSuffix(s.File, "_test.go") && s.EndLine > s.Line {
				cands = append(cands, cand{s, len(g.Callers(id))})
			}
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.s.ID, b.s.ID)) })
	cands = cands[:min(5, len(cands))]

	var warmLedger, warmMem []time.Duration
	var tokens []int
	for _, c := range cands {
		sel := &pack.Selection{File: c.s.File, StartLine: c.s.Line, EndLine: c.s.EndLine}
		t0 := time.Now()
		if _, err := pack.Build(ctx, pack.Input{Repo: dir, Store: store, Selection: sel, Counter: counter, Redactor: red}); err != nil {
			return err
		}
		warmLedger = append(warmLedger, time.Since(t0))
		t0 = time.Now()
		p, err := pack.Build(ctx, pack.Input{Repo: dir, Graph: g, Selection: sel, Counter: counter, Redactor: red})
		if err != nil {
			return err
		}
		warmMem = append(warmMem, time.Since(t0))
		tokens = append(tokens, p.Total)
	}
	// One more CLI-style run with a single package edited: the re-index
	// cost a user sees after a save.
	var edited string
	for _, c := range cands {
		edited = c.s.File
		break
	}
	if edited != "" {
		f, err := os.OpenFile(filepath.Join(dir, edited), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			fmt.Fprintln(f, "\n// edited by the benchmark")
			f.Close()
		}
	}
	t0 = time.Now()
	_, st2, err := codegraph.Index(ctx, dir, store)
	if err != nil {
		return err
	}
	incr := time.Since(t0)

	fmt.Fprintf(stdout, "\nWarm index: %s (%d packages, %d lines of Go)\n\n", modVersion, st.Units, goLines)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| measure\t| value\t|")
	fmt.Fprintln(tw, "|---\t|---\t|")
	fmt.Fprintf(tw, "| cold index build (go/packages + index + store)\t| %s (scan %s, load+index %s)\t|\n", cold.Round(time.Millisecond), st.Scan.Round(time.Millisecond), st.Load.Round(time.Millisecond))
	fmt.Fprintf(tw, "| symbols / edges\t| %d / %d\t|\n", len(g.Symbols), edgeCount(g))
	fmt.Fprintf(tw, "| Go heap allocated during the cold build\t| %d MiB\t|\n", (after.TotalAlloc-before.TotalAlloc)>>20)
	fmt.Fprintf(tw, "| Go heap live after the build (graph held)\t| %d MiB\t|\n", live.HeapAlloc>>20)
	fmt.Fprintf(tw, "| max RSS: bench process / go list children\t| %d MiB / %d MiB\t|\n", self.Maxrss>>10, children.Maxrss>>10)
	fmt.Fprintf(tw, "| warm pack via the ledger (scan + load + assemble + pack), median of %d\t| %s (max %s)\t|\n", len(warmLedger), median(warmLedger), slices.Max(warmLedger).Round(time.Millisecond))
	fmt.Fprintf(tw, "| warm pack, graph in memory (bcode-ls), median of %d\t| %s (max %s)\t|\n", len(warmMem), median(warmMem), slices.Max(warmMem).Round(time.Millisecond))
	fmt.Fprintf(tw, "| pack tokens (budget 8000), min-max\t| %d-%d\t|\n", slices.Min(tokens), slices.Max(tokens))
	fmt.Fprintf(tw, "| re-index after editing one file (%s)\t| %s, %d package(s) re-indexed\t|\n", edited, incr.Round(time.Millisecond), len(st2.Reindexed))
	tw.Flush()
	return nil
}

func edgeCount(g *codegraph.Graph) int {
	n := 0
	for _, id := range g.IDs() {
		n += len(g.Out(id))
	}
	return n
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}
