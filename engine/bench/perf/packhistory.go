package perf

// The pack benchmark on real commits with their history: each project of
// testdata/packcorpus is a git bundle of a real Go or Python repository's
// history. A case is a real non-merge commit that modifies at least two
// existing source files of the project's language and at least one
// non-test function; the pack is built on its parent (the base, whose own
// history is what co-change mining sees), with the selection = the base
// version of the changed non-test function with the most changed lines.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/engine/codegraph/cochange"
	"github.com/bcode-dev/bcode/engine/pack"
	"github.com/bcode-dev/bcode/sandbox"
)

// minHistory is how many commits a base must have behind it to be a case:
// co-change mining needs a history to mine.
const minHistory = 40

// histCase is one real commit of a project.
type histCase struct {
	project, lang string
	base, commit  string
	subject       string
}

// benchGit runs git for the benchmark over its own testdata (not a hostile
// worktree), with no user or system configuration.
func benchGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("git %s: %v %s", strings.Join(args, " "), err, stderr)
	}
	return string(out), nil
}

func langOf(project string, dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return "go"
	}
	return "python"
}

func extOf(lang string) string {
	if lang == "go" {
		return ".go"
	}
	return ".py"
}

func isTestFile(lang, rel string) bool {
	if lang == "go" {
		return strings.HasSuffix(rel, "_test.go")
	}
	base := path.Base(rel)
	return strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || strings.Contains("/"+rel, "/tests/") || strings.Contains("/"+rel, "/test/") || base == "conftest.py"
}

// selectHistCases picks up to n cases of a cloned project, newest first.
func selectHistCases(ctx context.Context, project, dir string, n int) ([]histCase, error) {
	lang := langOf(project, dir)
	ext := extOf(lang)
	out, err := benchGit(ctx, dir, "log", "--no-merges", "--format=%x00%H %P%x01%s", "--name-status", "--no-renames", "HEAD")
	if err != nil {
		return nil, err
	}
	var cases []histCase
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		head, rest, _ := strings.Cut(rec, "\n")
		ids, subject, _ := strings.Cut(head, "\x01")
		f := strings.Fields(ids)
		if len(f) != 2 {
			continue // a root commit
		}
		modified, nonTest := 0, 0
		for _, l := range strings.Split(rest, "\n") {
			st, file, ok := strings.Cut(l, "\t")
			if !ok || st != "M" || !strings.HasSuffix(file, ext) {
				continue
			}
			modified++
			if !isTestFile(lang, file) {
				nonTest++
			}
		}
		if modified < 2 || nonTest < 1 {
			continue
		}
		count, err := benchGit(ctx, dir, "rev-list", "--count", f[1])
		if err != nil {
			return nil, err
		}
		if c, _ := strconv.Atoi(strings.TrimSpace(count)); c < minHistory {
			continue
		}
		cases = append(cases, histCase{project: project, lang: lang, base: f[1], commit: f[0], subject: subject})
		if len(cases) == n*3 {
			break // more than enough to find n with a changed function
		}
	}
	return cases, nil
}

// target is a function of the base that the change edits.
type target struct {
	changedFunc
	decl int // the line of its signature (func/def)
}

// baseTargets lists the changed functions of every modified file of the
// case's language: Go through go/parser, Python through the Python index
// (functions and methods, not classes).
func baseTargets(g *codegraph.Graph, repo, lang string, hunks map[string][][2]int) []target {
	var out []target
	for file, ranges := range hunks {
		if lang == "go" {
			for _, cf := range changedFuncs(filepath.Join(repo, file), file, ranges) {
				out = append(out, target{changedFunc: cf, decl: goDeclLine(filepath.Join(repo, file), cf.name, cf.start, cf.end)})
			}
			continue
		}
		lines := readLines(filepath.Join(repo, file))
		for _, s := range g.FileSymbols(file) {
			if s.Kind != codegraph.KindFunc && s.Kind != codegraph.KindMethod {
				continue
			}
			n := 0
			for _, r := range ranges {
				lo, hi := max(r[0], s.Line), min(r[1], s.EndLine)
				if lo <= hi {
					n += hi - lo + 1
				}
			}
			if n == 0 {
				continue
			}
			decl := s.Line
			for i := s.Line; i <= min(s.EndLine, len(lines)); i++ {
				if regexp.MustCompile(`^\s*(async\s+)?def\s+` + regexp.QuoteMeta(s.Name) + `\b`).MatchString(lines[i-1]) {
					decl = i
					break
				}
			}
			out = append(out, target{changedFunc: changedFunc{file: file, name: s.Name, start: s.Line, end: s.EndLine, changedLines: n, isTest: isTestFile(lang, file) || s.Test}, decl: decl})
		}
	}
	// A Python method nested in a changed method is not a separate target.
	return out
}

func readLines(p string) []string {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	return strings.Split(string(b), "\n")
}

func goDeclLine(p, name string, start, end int) int {
	lines := readLines(p)
	for i := start; i <= min(end, len(lines)); i++ {
		if regexp.MustCompile(`^func\s*(\([^)]*\)\s*)?` + regexp.QuoteMeta(name) + `\b`).MatchString(lines[i-1]) {
			return i
		}
	}
	return start
}

// histPacker is what the history corpus's cases are packed and counted
// with.
type histPacker struct {
	// eng builds "bcode pack": app.Pack, the pack `bcode pack --selection`
	// prints and an attempt gets, with its token counter and its redactor.
	eng *app.Engine
	// tokenizer is the pack's --tokenizer; "": the repository's [model]
	// endpoint, as bcode pack decides.
	tokenizer string
	// counter counts the baselines' tokens.
	counter pack.Counter
	// index is the product pack's Go index, one per project (see
	// selectionPack).
	index *app.PackIndex
}

// selectionPack is the product's pack for a selection at budget, its Go
// index kept in memory between packs as a bcode-ls connection keeps it (the
// bench's own index, store, may be a file cache the product never reads).
func (hp histPacker) selectionPack(ctx context.Context, repo string, index *app.PackIndex, sel target, budget int) (*pack.Pack, error) {
	return hp.eng.Pack(ctx, app.PackRequest{Repo: repo, Budget: budget, Index: index,
		Selection: &engine.Selection{File: sel.file, StartLine: sel.start, EndLine: sel.end},
		Tokenizer: hp.tokenizer, TokenizerProbe: 2 * time.Second})
}

// benchHistCase scores the pack and the baselines on one commit.
func benchHistCase(ctx context.Context, hp histPacker, c histCase, repo string, store codegraph.Store) (changeResult, error) {
	r := changeResult{name: c.project + " " + c.commit[:10], by: map[string]map[int]scores{}}
	ext := extOf(c.lang)
	hunks, err := checkoutHistCase(ctx, c, repo)
	if err != nil {
		return r, err
	}
	start := time.Now()
	var g *codegraph.Graph
	if c.lang == "go" {
		g, _, err = codegraph.Index(ctx, repo, store)
	} else {
		g, _, err = codegraph.IndexPython(ctx, repo)
	}
	if err != nil {
		return r, fmt.Errorf("index: %w", err)
	}
	r.index = time.Since(start)
	funcs := baseTargets(g, repo, c.lang, hunks)
	slices.SortFunc(funcs, func(a, b target) int {
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
	targets := append([]target(nil), funcs[1:]...)
	r.targets, r.targetFuncs = len(targetFiles), len(targets)
	if len(targets) == 0 {
		return r, fmt.Errorf("only one function changed: no function to recall")
	}

	conf, err := sandbox.OpenConfined(repo)
	if err != nil {
		return r, err
	}
	defer conf.Close()
	lines := readLines(filepath.Join(repo, sel.file))
	idents := selectionIdentifiers(strings.Join(lines[sel.start-1:min(sel.end, len(lines))], "\n"))
	ranked, err := grepRankExt(conf, idents, ext)
	if err != nil {
		return r, err
	}
	hist, err := cochange.Mine(ctx, repo, "")
	if err != nil {
		return r, fmt.Errorf("history: %w", err)
	}

	for _, budget := range budgets {
		if err := r.scoreBudget(ctx, hp, histInputs{repo: repo, index: hp.index, lang: c.lang, sel: sel, targetFiles: targetFiles, targets: targets,
			conf: conf, ranked: ranked, idents: idents, hist: hist}, budget); err != nil {
			return r, err
		}
	}
	return r, nil
}

// histInputs are what one case's methods are scored on at every budget.
type histInputs struct {
	repo        string
	index       *app.PackIndex
	lang        string
	sel         target
	targetFiles []string
	targets     []target
	conf        *sandbox.Confined
	ranked      []grepHit
	idents      []string
	hist        *cochange.History
}

// scoreBudget scores the pack and the three baselines at one budget.
func (r *changeResult) scoreBudget(ctx context.Context, hp histPacker, in histInputs, budget int) error {
	t0 := time.Now()
	p, err := hp.selectionPack(ctx, in.repo, in.index, in.sel, budget)
	if err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	el := time.Since(t0)
	r.add("bcode pack", budget, scoreShown(p.Files(), p.Shown(), in.targetFiles, in.targets, p.Total, el))
	if budget == budgets[len(budgets)-1] {
		r.missed = missedTargets(p.Shown(), in.targets)
		r.ranking, r.targetList = p.Ranking, in.targets
	}
	r.why = append(r.why, explainMisses(p, budget, in.targets)...)

	t0 = time.Now()
	files, text, n := grepLines(ctx, in.conf, in.ranked, in.idents, budget, hp.counter)
	r.add("grep lines", budget, scoreText(files, text, in.targetFiles, in.targets, n, time.Since(t0), false))

	t0 = time.Now()
	files, text, n = grepWholeFiles(ctx, in.conf, in.ranked, budget, hp.counter)
	r.add("grep whole files", budget, scoreText(files, text, in.targetFiles, in.targets, n, time.Since(t0), true))

	t0 = time.Now()
	files, shown, n := historyOnly(ctx, in.conf, in.hist, in.sel, in.lang, budget, hp.counter)
	r.add("history only", budget, scoreShown(files, shown, in.targetFiles, in.targets, n, time.Since(t0)))
	return nil
}

// checkoutHistCase checks out the case's base, clean, and returns the
// base's changed lines per file of the language; a case must change two
// existing files.
func checkoutHistCase(ctx context.Context, c histCase, repo string) (map[string][][2]int, error) {
	ext := extOf(c.lang)
	diff, err := benchGit(ctx, repo, "diff", "-U0", "--no-renames", "--diff-filter=M", "--no-ext-diff", c.base, c.commit)
	if err != nil {
		return nil, err
	}
	hunks := baseHunks(diff)
	for f := range hunks {
		if !strings.HasSuffix(f, ext) {
			delete(hunks, f)
		}
	}
	if len(hunks) < 2 {
		return nil, fmt.Errorf("modifies %d existing %s file(s), need 2", len(hunks), ext)
	}
	if _, err := benchGit(ctx, repo, "checkout", "-q", "-f", "--detach", c.base); err != nil {
		return nil, err
	}
	if _, err := benchGit(ctx, repo, "clean", "-q", "-fdx", "-e", ".bcode-bench-*"); err != nil {
		return nil, err
	}
	return hunks, nil
}

// scoreShown scores an output that lists the functions it shows: a target
// function counts when it is shown as a body or a signature.
func scoreShown(files []string, shown []pack.Shown, targetFiles []string, targets []target, tokens int, el time.Duration) scores {
	s := scores{tokens: tokens, elapsed: el}
	s.fileRecall = fileRecall(files, targetFiles)
	hit, body := 0, 0
	for _, t := range targets {
		found, asBody := false, false
		for _, x := range shown {
			if x.File == t.file && x.Name == t.name && x.Line >= t.start && x.Line <= t.end {
				found = true
				asBody = asBody || x.Form == pack.FormBody
			}
		}
		if found {
			hit++
		}
		if asBody {
			body++
		}
	}
	s.funcRecall = float64(hit) / float64(len(targets))
	s.bodyRecall = float64(body) / float64(len(targets))
	s.codeBody = codeBodyRecall(targets, func(t target) bool {
		return slices.ContainsFunc(shown, func(x pack.Shown) bool {
			return x.Form == pack.FormBody && x.File == t.file && x.Name == t.name && x.Line >= t.start && x.Line <= t.end
		})
	})
	return s
}

// codeBodyRecall is the share of the changed non-test functions whose body
// is shown (what an agent needs to edit them), or -1 when the change
// edits no non-test function but the selection.
func codeBodyRecall(targets []target, bodyShown func(target) bool) float64 {
	n, hit := 0, 0
	for _, t := range targets {
		if t.isTest {
			continue
		}
		n++
		if bodyShown(t) {
			hit++
		}
	}
	if n == 0 {
		return -1
	}
	return float64(hit) / float64(n)
}

// missedTargets names the targets shown neither as a body nor a signature.
func missedTargets(shown []pack.Shown, targets []target) []string {
	var out []string
	for _, t := range targets {
		if !slices.ContainsFunc(shown, func(x pack.Shown) bool {
			return x.File == t.file && x.Name == t.name && x.Line >= t.start && x.Line <= t.end
		}) {
			out = append(out, fmt.Sprintf("%s:%d %s", t.file, t.start, t.name))
		}
	}
	return out
}

var grepLineRe = regexp.MustCompile(`(?m)^([^:\n]+):(\d+): `)

// scoreText scores a grep output: a target counts when its signature line
// is among the lines shown, or (whole files) when its file is shown.
func scoreText(files []string, text string, targetFiles []string, targets []target, tokens int, el time.Duration, whole bool) scores {
	s := scores{tokens: tokens, elapsed: el}
	s.fileRecall = fileRecall(files, targetFiles)
	shownFile := map[string]bool{}
	for _, f := range files {
		shownFile[f] = true
	}
	lineShown := map[string]bool{}
	for _, m := range grepLineRe.FindAllStringSubmatch(text, -1) {
		lineShown[m[1]+":"+m[2]] = true
	}
	hit := 0
	for _, t := range targets {
		if whole && shownFile[t.file] || lineShown[fmt.Sprintf("%s:%d", t.file, t.decl)] {
			hit++
		}
	}
	s.funcRecall = float64(hit) / float64(len(targets))
	if whole {
		s.bodyRecall = s.funcRecall
	}
	s.codeBody = codeBodyRecall(targets, func(t target) bool { return whole && shownFile[t.file] })
	return s
}

func fileRecall(files, targetFiles []string) float64 {
	if len(targetFiles) == 0 {
		return 1
	}
	hit := 0
	for _, f := range targetFiles {
		if slices.Contains(files, f) {
			hit++
		}
	}
	return float64(hit) / float64(len(targetFiles))
}

// grepRankExt is grepRank over the files with extension ext.
func grepRankExt(conf *sandbox.Confined, idents []string, ext string) ([]grepHit, error) {
	saved := grepExt
	grepExt = ext
	defer func() { grepExt = saved }()
	return grepRank(conf, idents)
}

var declRe = regexp.MustCompile(`^\s*(?:func\s*(?:\([^)]*\)\s*)?|(?:async\s+)?def\s+)([A-Za-z_][A-Za-z0-9_]*)`)

// historyOnly is the history baseline: the functions that changed with the
// selection in the base's history, as bodies in order of confidence (found
// in their files by their declaration line), then the files that changed
// with the selection's file, each with its declaration lines, until the
// budget is full. It uses no code index: only git history and regular
// expressions.
func historyOnly(ctx context.Context, conf *sandbox.Confined, h *cochange.History, sel target, lang string, budget int, c pack.Counter) ([]string, []pack.Shown, int) {
	files, funcs, _ := h.Related(sel.file, sel.name)
	ht := historyText{conf: conf, ext: extOf(lang), budget: budget, shownFiles: map[string]bool{}}
	for _, x := range rankedFuncs(funcs) {
		ht.addBody(x.e, lang)
	}
	for _, x := range rankedFiles(files) {
		if !ht.addDeclarations(x.f) {
			break
		}
	}
	// Declaration lines sit inside the target's range for Go (whose start
	// includes the doc comment) and Python (decorators) alike.
	return sortedKeys(ht.shownFiles), ht.shown, countTokens(ctx, c, ht.out.String())
}

type ruleFunc struct {
	e cochange.Entity
	r cochange.Rule
}

// rankedFuncs orders co-changed functions by confidence, then support.
func rankedFuncs(funcs map[cochange.Entity]cochange.Rule) []ruleFunc {
	var fr []ruleFunc
	for e, r := range funcs {
		fr = append(fr, ruleFunc{e, r})
	}
	slices.SortFunc(fr, func(a, b ruleFunc) int {
		return cmp.Or(cmp.Compare(b.r.Confidence, a.r.Confidence), cmp.Compare(b.r.Support, a.r.Support), cmp.Compare(a.e.File, b.e.File), cmp.Compare(a.e.Name, b.e.Name))
	})
	return fr
}

type ruleFile struct {
	f string
	r cochange.Rule
}

// rankedFiles orders co-changed files by confidence, then support.
func rankedFiles(files map[string]cochange.Rule) []ruleFile {
	var fl []ruleFile
	for f, r := range files {
		fl = append(fl, ruleFile{f, r})
	}
	slices.SortFunc(fl, func(a, b ruleFile) int {
		return cmp.Or(cmp.Compare(b.r.Confidence, a.r.Confidence), cmp.Compare(b.r.Support, a.r.Support), cmp.Compare(a.f, b.f))
	})
	return fl
}

// historyText is the history baseline's output as it fills its budget.
type historyText struct {
	conf       *sandbox.Confined
	ext        string
	budget     int
	used       int
	out        strings.Builder
	shown      []pack.Shown
	shownFiles map[string]bool
}

// emit adds text when it fits the budget.
func (ht *historyText) emit(text string) bool {
	cost := pack.EstimateTokens(text)
	if ht.used+cost > ht.budget {
		return false
	}
	ht.out.WriteString(text)
	ht.used += cost
	return true
}

// lines are f's lines, nil when f is unreadable or not of the language.
func (ht *historyText) lines(f string) []string {
	data, err := ht.conf.ReadFile(f, maxBenchFile)
	if err != nil || !strings.HasSuffix(f, ht.ext) {
		return nil
	}
	return strings.Split(string(data), "\n")
}

// addBody adds e's body, found in its file by its declaration line, when
// it fits.
func (ht *historyText) addBody(e cochange.Entity, lang string) {
	l := ht.lines(e.File)
	for i, line := range l {
		m := declRe.FindStringSubmatch(line)
		if m == nil || m[1] != e.Name {
			continue
		}
		end := bodyEnd(l, i, lang)
		text := fmt.Sprintf("%s:%d-%d\n%s\n", e.File, i+1, end+1, strings.Join(l[i:end+1], "\n"))
		if ht.emit(text) {
			ht.shown = append(ht.shown, pack.Shown{File: e.File, Name: e.Name, Line: i + 1, Form: pack.FormBody})
			ht.shownFiles[e.File] = true
		}
		return
	}
}

// bodyEnd is the last line of the body declared on line i: the next
// line at its indent or less (Go: the closing brace at column 0).
func bodyEnd(l []string, i int, lang string) int {
	end := i
	ind := len(l[i]) - len(strings.TrimLeft(l[i], " \t"))
	for j := i + 1; j < len(l); j++ {
		t := l[j]
		if strings.TrimSpace(t) == "" {
			continue
		}
		if lang == "go" {
			if t == "}" {
				return j
			}
			continue
		}
		if len(t)-len(strings.TrimLeft(t, " \t")) <= ind {
			break
		}
		end = j
	}
	return end
}

// addDeclarations adds f's name, then its declaration lines while they
// fit; false when not even the name fits, and the budget is full.
func (ht *historyText) addDeclarations(f string) bool {
	l := ht.lines(f)
	if l == nil {
		return true
	}
	if !ht.emit(f + ":\n") {
		return false
	}
	ht.shownFiles[f] = true
	for i, line := range l {
		if m := declRe.FindStringSubmatch(line); m != nil {
			if !ht.emit(fmt.Sprintf("  %d: %s\n", i+1, strings.TrimSpace(line))) {
				break
			}
			ht.shown = append(ht.shown, pack.Shown{File: f, Name: m[1], Line: i + 1, Form: pack.FormSignature})
		}
	}
	return true
}

// runHistoryCorpus clones each bundle of dir and benchmarks up to perProject
// cases of it.
func runHistoryCorpus(ctx context.Context, hp histPacker, dir, work, indexCache, half string, perProject, limit int, stderr io.Writer) ([]changeResult, error) {
	bundles, err := filepath.Glob(filepath.Join(dir, "*.bundle"))
	if err != nil {
		return nil, err
	}
	if len(bundles) == 0 {
		return nil, fmt.Errorf("no *.bundle in %s", dir)
	}
	slices.Sort(bundles)
	var results []changeResult
	for _, b := range bundles {
		project := strings.TrimSuffix(filepath.Base(b), ".bundle")
		if half == "tuning" && !isTuning(project) || half == "held-out" && isTuning(project) {
			continue
		}
		repo := filepath.Join(work, project)
		if err := os.RemoveAll(repo); err != nil {
			return nil, err
		}
		abs, _ := filepath.Abs(b)
		if _, err := benchGit(ctx, work, "clone", "-q", abs, repo); err != nil {
			return nil, err
		}
		cases, err := selectHistCases(ctx, project, repo, perProject)
		if err != nil {
			return nil, err
		}
		store := &codegraph.MemoryStore{}
		hp.index = &app.PackIndex{}
		taken := 0
		for _, c := range cases {
			if taken == perProject || limit > 0 && len(results) >= limit {
				break
			}
			var st codegraph.Store = store
			if indexCache != "" {
				st = caseStore{path: filepath.Join(indexCache, project+"-"+c.base+".json")}
			}
			r, err := benchHistCase(ctx, hp, c, repo, st)
			if err != nil {
				fmt.Fprintf(stderr, "skip %s %s: %v\n", project, c.commit[:10], err)
				continue
			}
			r.lang = c.lang
			fmt.Fprintf(stderr, "%s %s (%s): selection %s, %d other files, %d other functions, index %s\n",
				project, c.commit[:10], c.lang, r.selection, r.targets, r.targetFuncs, r.index.Round(time.Millisecond))
			results = append(results, r)
			taken++
		}
	}
	return results, nil
}

// caseStore keeps one case's Go index in a JSON file (--index-cache), so a
// re-run of the benchmark, e.g. while studying its misses, skips `go list`:
// the file is keyed by project and base commit, and codegraph.Index still
// re-indexes any directory whose content hash differs.
type caseStore struct{ path string }

// Load implements codegraph.Store.
func (s caseStore) Load(_ context.Context, _ string) (map[string]*codegraph.Unit, error) {
	out := map[string]*codegraph.Unit{}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return map[string]*codegraph.Unit{}, nil // unreadable: index again
	}
	return out, nil
}

// Save implements codegraph.Store.
func (s caseStore) Save(ctx context.Context, repo string, units []*codegraph.Unit, removed []string) error {
	all, err := s.Load(ctx, repo)
	if err != nil {
		return err
	}
	for _, d := range removed {
		delete(all, d)
	}
	for _, u := range units {
		all[u.Dir] = u
	}
	data, err := json.Marshal(all)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(s.path, data, 0o644)
}

// miss is why the pack did not show one target at one budget.
type miss struct {
	budget int
	target string
	class  string // missNoSignal, missCut or missFileOnly
	rank   int    // 1-based position in the ranking, 0 when unranked
	score  float64
	why    string
}

const (
	missNoSignal = "no signal (not ranked)"
	missCut      = "ranked, cut by the budget"
	missFileOnly = "ranked, cut by the budget; its file is in the pack"
	missFileNS   = "no signal; its file is in the pack"
	missSigOnly  = "changed code shown by its signature only"
)

// explainMisses classifies each target the pack did not show: whether the
// ranker found it at all, where it ranked, and whether the pack shows its
// file (so a signature ring over the pack's files would have caught it).
func explainMisses(p *pack.Pack, budget int, targets []target) []miss {
	shown := p.Shown()
	files := p.Files()
	var out []miss
	for _, t := range targets {
		is := func(x pack.Shown) bool {
			return x.File == t.file && x.Name == t.name && x.Line >= t.start && x.Line <= t.end
		}
		m := miss{budget: budget, target: fmt.Sprintf("%s:%d %s", t.file, t.start, t.name)}
		i := slices.IndexFunc(p.Ranking, func(x pack.Ranked) bool {
			return x.File == t.file && x.Name == t.name && x.Line >= t.start && x.Line <= t.end
		})
		if slices.ContainsFunc(shown, is) {
			// A changed non-test function shown only by its signature is
			// a body miss (the column the ranking is tuned for).
			if !t.isTest && i >= 0 && !slices.ContainsFunc(shown, func(x pack.Shown) bool { return is(x) && x.Form == pack.FormBody }) {
				m.class, m.rank, m.score, m.why = missSigOnly, i+1, p.Ranking[i].Score, p.Ranking[i].Why
				out = append(out, m)
			}
			continue
		}
		inFile := slices.Contains(files, t.file)
		switch {
		case i < 0 && inFile:
			m.class = missFileNS
		case i < 0:
			m.class = missNoSignal
		case inFile:
			m.class, m.rank, m.score, m.why = missFileOnly, i+1, p.Ranking[i].Score, p.Ranking[i].Why
		default:
			m.class, m.rank, m.score, m.why = missCut, i+1, p.Ranking[i].Score, p.Ranking[i].Why
		}
		out = append(out, m)
	}
	return out
}
