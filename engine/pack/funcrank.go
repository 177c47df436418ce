package pack

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bcode-dev/bcode/engine/codegraph"
	"github.com/bcode-dev/bcode/engine/codegraph/cochange"
	"github.com/bcode-dev/bcode/sandbox"
)

// Weights of the signals that rank a function by how likely it is to
// change with the selection. A function's score is the sum of the signals
// it has; docs/evaluation-pack.md says where each weight comes from.
const (
	wCall         = 1.0  // calls the selection or is called by it (interface dispatch included)
	wCall2        = 0.25 // two calls away
	wTest         = 0.6  // a test reaching the selection: wTest / calls away
	wHistFunc     = 2.0  // × confidence of "selection changed → it changed" in past commits
	wHistFileFunc = 1.0  // × confidence of "selection's file changed → it changed"
	wHistFile     = 0.8  // × confidence of "selection's file changed → its file changed", ÷ √(functions in that file)
	wSameFile     = 0.3  // defined in the selection's file
	wNamed        = 0.3  // the selection's text names it (a call the index could not resolve)
	wRank         = 0.5  // × its PageRank over the reference graph, relative to the highest
	wTypeMethod   = 0.15 // a method of a type the selection uses
	wSibling      = 0.5  // another implementation of an interface method the selection implements
	wNamesake     = 0.3  // has the selection's name, in another file
	wTestFile     = 0.35 // a test in the selection's file's test file (x.go: x_test.go; x.py: test_x.py)
	wIsTest       = 0    // added for every test (not a reason)
)

// Budget policy of the function sections.
const (
	// Bodies of the most likely functions, the signatures of the next
	// ring, and what is kept for the ring while the sections before it are
	// placed, at 4,000 tokens and below and from 8,000 up (shares).
	shareBodiesSmall, shareBodiesLarge = 0.40, 0.60
	shareRingSmall, shareRingLarge     = 0.45, 0.25
	reserveRingSmall, reserveRingLarge = 0.35, 0.15
	// Bodies are chosen among the best ranksPerKToken ranks per 1,000
	// tokens of budget (bodyOrder).
	ranksPerKToken = 10
	// A body costing more than this fraction of the budget is shown by its
	// signature: at a small budget ten signatures are worth more than one
	// long body.
	maxBodyShare = 0.15
	maxBodies    = 40
	// Below this budget no body is shown: the ring's lines (about 12
	// tokens each) name ten functions for the price of one short body.
	minBodiesBudget = 2000
	maxSigs         = 500
)

// feature is one kind of evidence a function's score sums, each with its
// weight (the const block above): the ranking is the linear model
// Σ weight × value, and Ranked.Features keeps the values so the benchmark
// can refit the weights (bcode bench perf pack --fit).
type feature int

const (
	fCall feature = iota
	fCall2
	fTest
	fTestFile
	fHistFunc
	fHistFileFunc
	fHistFile
	fSameFile
	fNamed
	fTypeMethod
	fSibling
	fNamesake
	fRank
	fIsTest // 1 for a test: tests and code are not equally likely to change
	numFeatures
)

// FeatureNames name Ranked.Features' values, in order.
var FeatureNames = [numFeatures]string{"call", "call2", "test", "testfile", "histfunc", "histfilefunc", "histfile", "samefile", "named", "typemethod", "sibling", "namesake", "rank", "istest"}

// weights are the features' weights, in FeatureNames' order.
var weights = [numFeatures]float64{wCall, wCall2, wTest, wTestFile, wHistFunc, wHistFileFunc, wHistFile, wSameFile, wNamed, wTypeMethod, wSibling, wNamesake, wRank, wIsTest}

// signal is one reason a function is in the pack.
type signal struct {
	weight float64
	why    string
	short  string // the same in a few words, for signature lines
}

type scored struct {
	sym     *codegraph.Symbol
	score   float64
	signals []signal
	x       [numFeatures]float64 // each feature's value, summed
}

// add adds value x of feature f; it is a reason shown with the function
// when its weighted value is positive.
func (s *scored) add(f feature, x float64, why, short string) {
	if x <= 0 {
		return
	}
	s.x[f] += x
	w := weights[f] * x
	s.score += w
	if w > 0 {
		s.signals = append(s.signals, signal{w, why, short})
	}
}

// why lists the signals, strongest first.
func (s *scored) why(short bool) string {
	sig := slices.Clone(s.signals)
	slices.SortStableFunc(sig, func(a, b signal) int { return cmp.Compare(b.weight, a.weight) })
	parts := make([]string, 0, len(sig))
	for _, x := range sig {
		if short {
			parts = append(parts, x.short)
		} else {
			parts = append(parts, x.why)
		}
	}
	if short {
		return strings.Join(parts, ", ")
	}
	return strings.Join(parts, "; ")
}

// historyCacheDir is where mined histories are kept between runs.
func historyCacheDir() string {
	dir, err := sandbox.CacheDir("cochange")
	if err != nil {
		return ""
	}
	return dir
}

// history mines the repository's git history once per Build; nil when the
// repository has none (a note says so).
func (b *builder) history(ctx context.Context) *cochange.History {
	if b.histDone {
		return b.hist
	}
	b.histDone = true
	var h *cochange.History
	var err error
	if b.histRead != nil {
		r := <-b.histRead
		h, err = r.h, r.err
	} else {
		h, err = cochange.Mine(ctx, b.conf.Dir(), historyCacheDir())
	}
	if err != nil {
		b.notes = append(b.notes, "no git history to mine: co-change signal off")
		return nil
	}
	b.hist = h
	return h
}

// minedHistory is what cochange.Mine returned.
type minedHistory struct {
	h   *cochange.History
	err error
}

// readHistoryAhead starts reading the history beside the index, for a
// pack that will rank functions: finding HEAD is a git process, and its
// wait overlaps the index's walk instead of following it. Build's return
// cancels a read nobody took.
func (b *builder) readHistoryAhead(ctx context.Context) {
	ch := make(chan minedHistory, 1)
	dir := b.conf.Dir()
	go func() {
		h, err := cochange.Mine(ctx, dir, historyCacheDir())
		ch <- minedHistory{h, err}
	}()
	b.histRead = ch
}

// innermostSymbols keeps the enclosing symbols that contain no other
// enclosing symbol (a Python method, not its class).
func innermostSymbols(syms []*codegraph.Symbol) []*codegraph.Symbol {
	var out []*codegraph.Symbol
	for _, s := range syms {
		inner := false
		for _, o := range syms {
			if o != s && o.File == s.File && o.Line >= s.Line && o.EndLine <= s.EndLine && (o.Line > s.Line || o.EndLine < s.EndLine) {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, s)
		}
	}
	return out
}

var wordRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// rankFunctions scores every function and method of the graph by how
// likely it is to change with the seeds, and returns those with any
// signal, best first.
func (b *builder) rankFunctions(ctx context.Context, g *codegraph.Graph, seeds []string, rank map[string]float64) []*scored {
	rk := &funcRanking{b: b, g: g, seeds: seeds, isSeed: map[string]bool{}, all: map[string]*scored{}}
	for _, s := range seeds {
		rk.isSeed[s] = true
	}
	rk.seedSyms = make([]*codegraph.Symbol, 0, len(seeds))
	for _, id := range seeds {
		if s := g.Symbols[id]; s != nil {
			rk.seedSyms = append(rk.seedSyms, s)
		}
	}
	// Each step adds its signals in turn; later steps look at what
	// earlier ones found, so the order matters.
	rk.scoreCalls()
	rk.scoreSiblings()
	rk.scoreTests()
	rk.scoreTypeMethods()
	rk.scoreHistory(ctx)
	rk.scoreSelection()
	return rk.ordered(rank)
}

// funcRanking is one ranking's state: the seeds, and each function scored
// so far.
type funcRanking struct {
	b        *builder
	g        *codegraph.Graph
	seeds    []string
	isSeed   map[string]bool
	seedSyms []*codegraph.Symbol // the seeds the graph has
	all      map[string]*scored  // function ID → its score so far
}

// get is id's score, made on first use; nil when id is not a function or
// method, or is a seed.
func (rk *funcRanking) get(id string) *scored {
	s := rk.all[id]
	if s == nil {
		sym := rk.g.Symbols[id]
		if sym == nil || (sym.Kind != codegraph.KindFunc && sym.Kind != codegraph.KindMethod) || rk.isSeed[id] {
			return nil
		}
		s = &scored{sym: sym}
		rk.all[id] = s
	}
	return s
}

// scoreCalls scores calls, both ways, nearest first.
func (rk *funcRanking) scoreCalls() {
	callers := map[string]bool{}
	for _, s := range rk.seeds {
		for _, c := range rk.g.Callers(s) {
			callers[c] = true
		}
	}
	for _, r := range rk.g.Neighbourhood(rk.seeds, 2) {
		sc := rk.get(r.ID)
		if sc == nil || sc.sym.Test {
			continue // a test is scored as a test, below: one edge, one signal
		}
		switch {
		case r.Dist == 1 && callers[r.ID]:
			sc.add(fCall, 1, "caller", "caller")
		case r.Dist == 1:
			sc.add(fCall, 1, "callee", "callee")
		default:
			sc.add(fCall2, 1, "2 calls away", "2 calls away")
		}
	}
}

// scoreSiblings scores sibling implementations: the other methods an
// interface method the selection implements may dispatch to (in Python,
// the overrides of the same base method, and the base method itself).
func (rk *funcRanking) scoreSiblings() {
	for _, s := range rk.seeds {
		for _, e := range rk.g.In(s) {
			if e.Kind != codegraph.EdgeDispatch {
				continue
			}
			if sc := rk.get(e.From); sc != nil {
				sc.add(fSibling, 1, "the method the selection overrides", "overridden")
			}
			for _, d := range rk.g.Out(e.From) {
				if d.Kind == codegraph.EdgeDispatch && d.To != s {
					if sc := rk.get(d.To); sc != nil && !slices.ContainsFunc(sc.signals, func(x signal) bool { return x.short == "sibling" }) {
						sc.add(fSibling, 1, "another implementation of "+shortID(e.From)+", which the selection implements", "sibling")
					}
				}
			}
		}
	}
}

// scoreTests scores the tests that reach the selection, nearer higher.
func (rk *funcRanking) scoreTests() {
	for _, s := range rk.seeds {
		for _, r := range rk.g.TestsReaching(s, 60) {
			if sc := rk.get(r.ID); sc != nil && sc.x[fTest] == 0 {
				sc.add(fTest, 1/float64(r.Dist), fmt.Sprintf("test reaching the selection (%d call(s) away)", r.Dist), fmt.Sprintf("test, %d calls", r.Dist))
			}
		}
	}
}

// scoreTypeMethods scores the methods of the types the selection uses (the
// implementations of the interfaces among them included).
func (rk *funcRanking) scoreTypeMethods() {
	g := rk.g
	for _, s := range rk.seeds {
		for _, t := range g.TypesUsed(s) {
			types := []string{t}
			if ts := g.Symbols[t]; ts != nil && ts.Kind == codegraph.KindInterface {
				types = append(types, g.Implementations(t)...)
			}
			for _, ty := range types {
				tsym := g.Symbols[ty]
				if tsym == nil {
					continue
				}
				for _, m := range g.FileSymbols(tsym.File) {
					if m.Kind == codegraph.KindMethod && strings.HasPrefix(m.ID, ty+".") {
						if sc := rk.get(m.ID); sc != nil {
							sc.add(fTypeMethod, 1, "method of "+shortID(ty)+", a type the selection uses", "method of a used type")
						}
					}
				}
			}
		}
	}
}

// scoreHistory scores by the repository's history: functions and files
// that changed together with the selection in past commits.
func (rk *funcRanking) scoreHistory(ctx context.Context) {
	h := rk.b.history(ctx)
	if h == nil || len(rk.seedSyms) == 0 {
		return
	}
	sel := rk.seedSyms[0]
	// Function to function, over the commits that changed the selected
	// function.
	if h.Touches(sel.File, sel.Name) > 0 {
		_, funcs, n := h.Related(sel.File, sel.Name)
		for e, r := range funcs {
			rk.scoreEntity(e, fHistFunc, damped(r), fmt.Sprintf("changed with the selection in %d of the selection's %d past commits", r.Support, n), fmt.Sprintf("co-changed %d/%d", r.Support, n))
		}
	}
	// Over the commits that changed the selection's file: functions, then
	// whole files.
	files, funcs, n := h.Related(sel.File, "")
	for e, r := range funcs {
		rk.scoreEntity(e, fHistFileFunc, damped(r), fmt.Sprintf("changed in %d of the %d past commits that changed the selection's file", r.Support, n), fmt.Sprintf("changed with the file %d/%d", r.Support, n))
	}
	for f, r := range files {
		rk.scoreCochangedFile(f, r, n)
	}
}

// scoreEntity adds a history signal to the functions e names (by file and
// name).
func (rk *funcRanking) scoreEntity(e cochange.Entity, f feature, x float64, why, short string) {
	for _, s := range rk.g.FileSymbols(e.File) {
		if s.Name == e.Name {
			if sc := rk.get(s.ID); sc != nil {
				sc.add(f, x, why, short)
			}
		}
	}
}

// scoreCochangedFile scores the functions of file f, which changed with
// the selection's file (rule r, over n commits), and records the file's
// strength for the repo map. The rule says some function of the file
// changed: it is spread over the file's functions.
func (rk *funcRanking) scoreCochangedFile(f string, r cochange.Rule, n int) {
	code := 0
	for _, s := range rk.g.FileSymbols(f) {
		if s.Kind == codegraph.KindFunc || s.Kind == codegraph.KindMethod {
			code++
		}
	}
	spread := 1 / math.Sqrt(float64(max(code, 1)))
	for _, s := range rk.g.FileSymbols(f) {
		if sc := rk.get(s.ID); sc != nil {
			sc.add(fHistFile, damped(r)*spread, fmt.Sprintf("its file changed in %d of the %d past commits that changed the selection's file", r.Support, n), fmt.Sprintf("file co-changed %d/%d", r.Support, n))
		}
	}
	if d := damped(r); d > rk.b.histFiles[f] {
		rk.b.histFiles[f] = d
	}
}

// selectionWords are the identifiers the selection's text (and the seeds'
// bodies) holds, but the seeds' own names: a seed's name names its
// namesakes, not its callees.
func (rk *funcRanking) selectionWords() map[string]bool {
	b := rk.b
	var selText string
	if b.sel != nil {
		selText, _ = b.src.snippet(b.sel.File, b.sel.StartLine, b.sel.EndLine)
		for _, s := range rk.seedSyms {
			t, _ := b.src.snippet(s.File, s.Line, s.EndLine)
			selText += "\n" + t
		}
	}
	words := map[string]bool{}
	for _, w := range wordRe.FindAllString(selText, -1) {
		words[w] = true
	}
	for _, s := range rk.seedSyms {
		delete(words, s.Name) // its own name names its namesakes, not its callees
	}
	return words
}

// scoreSelection scores what the selection itself points at: the tests in
// its file's test file, namesakes of the seeds in other files, functions
// of the same file, and functions the selection names (unless already
// found as a caller or callee).
func (rk *funcRanking) scoreSelection() {
	b := rk.b
	words := rk.selectionWords()
	selBase := ""
	if b.sel != nil {
		selBase = strings.TrimSuffix(path.Base(b.sel.File), path.Ext(b.sel.File))
	}
	for _, id := range rk.g.IDs() {
		sym := rk.g.Symbols[id]
		if sym.Kind != codegraph.KindFunc && sym.Kind != codegraph.KindMethod || rk.isSeed[id] {
			continue
		}
		if sym.Test && selBase != "" && testFileOf(sym.File, selBase) {
			rk.get(id).add(fTestFile, 1, "a test in the selection's test file", "in its test file")
		}
		if slices.ContainsFunc(rk.seedSyms, func(x *codegraph.Symbol) bool { return x.Name == sym.Name && x.File != sym.File && len(x.Name) > 2 }) {
			rk.get(id).add(fNamesake, 1, "same name as the selection (a sibling implementation, by convention)", "same name")
		}
		inSelFile := b.sel != nil && sym.File == b.sel.File
		named := len(sym.Name) > 2 && words[sym.Name]
		if !inSelFile && !named && rk.all[id] == nil {
			continue
		}
		sc := rk.get(id)
		if inSelFile {
			sc.add(fSameFile, 1, "same file", "same file")
		}
		if named && sc.x[fCall] == 0 {
			sc.add(fNamed, 1, "named in the selection", "named")
		}
	}
}

// ordered adds PageRank to every scored function and returns them best
// first (ties by rank, then ID).
func (rk *funcRanking) ordered(rank map[string]float64) []*scored {
	maxRank := 0.0
	for _, id := range rk.g.IDs() {
		if !rk.isSeed[id] {
			maxRank = max(maxRank, rank[id])
		}
	}
	out := make([]*scored, 0, len(rk.all))
	for _, sc := range rk.all {
		if maxRank > 0 {
			// Not a reason of its own: it orders what the other signals found.
			sc.x[fRank] = rank[sc.sym.ID] / maxRank
			sc.score += weights[fRank] * sc.x[fRank]
		}
		if sc.sym.Test {
			sc.x[fIsTest] = 1
			sc.score += weights[fIsTest]
		}
		out = append(out, sc)
	}
	slices.SortFunc(out, func(a, c *scored) int {
		return cmp.Or(cmp.Compare(c.score, a.score), cmp.Compare(rank[c.sym.ID], rank[a.sym.ID]), cmp.Compare(a.sym.ID, c.sym.ID))
	})
	return out
}

// testFileOf reports whether file is the test file of a source file named
// base (without extension): base_test.go, test_base.py, base_test.py.
func testFileOf(file, base string) bool {
	b := path.Base(file)
	return b == base+"_test.go" || b == "test_"+base+".py" || b == base+"_test.py"
}

// damped is a rule's focus-weighted confidence (cochange.Rule.Weighted)
// shrunk toward zero when the selection has changed in few commits: one
// shared commit is weak evidence (× n/(n+1): 1 of 1 counts 0.5, 4 of 4
// counts 0.8).
func damped(r cochange.Rule) float64 {
	if r.Confidence <= 0 {
		return 0
	}
	n := math.Round(float64(r.Support) / r.Confidence)
	return r.Weighted * n / (n + 1)
}

// functionSections are the function-level sections: bodies of the most
// likely functions, then the signature ring: every other ranked function
// as one short line under its file.
func (b *builder) functionSections(ranked []*scored, shown map[string]bool) (bodies, sigs candidate) {
	bodies = candidate{
		title:  "Functions likely to change with the selection",
		reason: "bodies of the functions most likely to change with the selection, best first; each header says why (co-changed n/m: changed with the selection in n of its m past commits; with the file n/m: in n of the m commits that changed its file)",
	}
	bodies.spillTo = ringTitle
	sigs = candidate{
		title:   ringTitle,
		reason:  "the next most likely functions, best first, under their file: `line name(params) — strongest reason`",
		grouped: true,
	}
	bodies.share, sigs.share, sigs.reserve = shares(b.in.Budget)
	maxBody := int(maxBodyShare * float64(b.in.Budget))
	if b.in.Budget < minBodiesBudget {
		maxBody = 0 // every function as a ring line
		sigs.share += bodies.share
	}
	sigLimit := maxCompactSignature
	if b.in.Budget < minBodiesBudget {
		sigLimit = maxCompactSignatureSmall
	}
	order, nBodies := bodyOrder(ranked, b.in.Budget)
	for i, sc := range order {
		if i >= nBodies+maxSigs {
			break
		}
		s := sc.sym
		why := sc.headline()
		sig := fmt.Sprintf("- `%s` — %s:%d (%s)", oneLineText(s.Signature), s.File, s.Line, sc.why(true))
		sigShown := []Shown{{File: s.File, Name: s.Name, Line: s.Line, Form: FormSignature}}
		ring := fmt.Sprintf("  %d %s — %s", s.Line, compactSignature(s.Signature, sigLimit), sc.strongest())
		it := item{label: s.ID, full: sig, short: sig, files: []string{s.File}, fullShown: sigShown, shortShown: sigShown, group: s.File, ring: ring}
		shown[s.ID] = true
		if i < nBodies {
			it.full, it.short = "", ""
			if text, err := b.src.snippet(s.File, s.Line, s.EndLine); err == nil && text != "" {
				full := fmt.Sprintf("%s:%d-%d (%s)\n", s.File, s.Line, s.EndLine, why) + fence(s.File, text)
				if EstimateTokens(full) <= maxBody {
					it.full = full
					it.fullShown = []Shown{{File: s.File, Name: s.Name, Line: s.Line, Form: FormBody}}
				}
			}
			bodies.items = append(bodies.items, it)
			continue
		}
		sigs.items = append(sigs.items, it)
	}
	if len(ranked) == 0 {
		bodies.note = "no function is related to the selection by calls, tests, types or history"
	}
	return bodies, sigs
}

// headlineSignals is how many reasons a body's header gives.
const headlineSignals = 3

// headline is the short form of the strongest signals, for a body's header.
func (s *scored) headline() string {
	sig := slices.Clone(s.signals)
	slices.SortStableFunc(sig, func(a, b signal) int { return cmp.Compare(b.weight, a.weight) })
	parts := make([]string, 0, headlineSignals)
	for _, x := range sig[:min(len(sig), headlineSignals)] {
		parts = append(parts, x.short)
	}
	return strings.Join(parts, ", ")
}

// ringTitle is the title of the signature ring's section.
const ringTitle = "Next ring (signatures)"

// strongest is the short form of the strongest signal.
func (s *scored) strongest() string {
	best := -1
	for i, x := range s.signals {
		if best < 0 || x.weight > s.signals[best].weight {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return s.signals[best].short
}

// maxCompactSignature caps a signature line of the ring, in bytes.
const (
	maxCompactSignature      = 100
	maxCompactSignatureSmall = 60 // below minBodiesBudget
)

// compactSignature is a declaration's first line without its keyword, a
// Python def's colon or a Go function's results: `(v Version) IncMinor()`,
// `evaluate_result(self, m)`; receiver, name and parameters are what an
// agent needs to call it or find it.
func compactSignature(sig string, limit int) string {
	sig = strings.NewReplacer("( ", "(", " )", ")", "[ ", "[", " ]", "]").Replace(oneLineText(sig))
	if rest, ok := strings.CutPrefix(sig, "func "); ok {
		sig = dropGoResults(rest)
	} else {
		sig = strings.TrimPrefix(sig, "async ")
		sig = strings.TrimPrefix(sig, "def ")
		sig = strings.TrimSuffix(sig, ":")
		sig = dropPythonDefaults(sig)
		for _, self := range []string{"(self, ", "(cls, "} {
			sig = strings.Replace(sig, self, "(", 1)
		}
		sig = strings.Replace(strings.Replace(sig, "(self)", "()", 1), "(cls)", "()", 1)
	}
	if len(sig) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(sig[cut]) {
			cut--
		}
		sig = sig[:cut] + "…"
	}
	return sig
}

// dropPythonDefaults removes the default values of a Python signature's
// parameters (`pos=0` → `pos`): the name says what to pass.
func dropPythonDefaults(sig string) string {
	var b strings.Builder
	depth, skipping := 0, false
	for _, r := range sig {
		switch {
		case r == '(' || r == '[' || r == '{':
			depth++
		case r == ')' || r == ']' || r == '}':
			depth--
			if depth == 0 {
				skipping = false
			}
		case r == ',' && depth == 1:
			skipping = false
		case r == '=' && depth == 1 && !skipping:
			skipping = true
			kept := strings.TrimRight(b.String(), " ")
			b.Reset()
			b.WriteString(kept)
			continue
		}
		if !skipping {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// dropGoResults cuts a Go signature (without "func ") after its parameter
// list: the receiver's parentheses, if any, then the name, then the
// parameters.
func dropGoResults(sig string) string {
	depth, groups := 0, 0
	want := 1
	if strings.HasPrefix(sig, "(") {
		want = 2 // receiver, then parameters
	}
	for i, r := range sig {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				groups++
				if groups == want {
					return sig[:i+1]
				}
			}
		}
	}
	return sig
}

// Weights returns the ranking's weights, in FeatureNames' order.
func Weights() []float64 { return slices.Clone(weights[:]) }

// shares are the bodies' share, the ring's and the ring's reserve at a
// budget: 0.40 / 0.45 / 0.35 at 4,000 tokens and below, 0.60 / 0.25 / 0.15
// from 8,000 up, in proportion between. The ring's value saturates as the
// budget grows (at 8,000 tokens it names about a hundred functions) while
// every body placed is one more function an agent can edit without a
// lookup; at 4,000 tokens the ring's room is worth more than more bodies
// (docs/evaluation-pack.md, "A second held-out set").
func shares(budget int) (bodies, ring, reserve float64) {
	t := min(max(float64(budget-4000)/4000, 0), 1)
	mix := func(small, large float64) float64 { return small + t*(large-small) }
	return mix(shareBodiesSmall, shareBodiesLarge), mix(shareRingSmall, shareRingLarge), mix(reserveRingSmall, reserveRingLarge)
}

// bodyOrder is the order the ranked functions are offered to the
// function sections in, and how many of its first entries are offered as
// bodies: the non-test functions among the best ranksPerKToken ranks per
// 1,000 tokens of budget (at most maxBodies), in rank order, then every
// other function in rank order. Bodies are for the code a change edits; a
// test is a ring line, where its line is enough to find it. The window
// keeps the ring's front at a small budget: a body that does not fit
// spills to the ring ahead of the ring's own lines, and code from deep in
// the ranking there would push out the tests ranked above it. Below
// minBodiesBudget no body is shown and the ranking is kept as it is.
func bodyOrder(ranked []*scored, budget int) ([]*scored, int) {
	if budget < minBodiesBudget {
		return ranked, maxBodies
	}
	window := budget * ranksPerKToken / 1000
	code := make([]*scored, 0, maxBodies)
	var rest []*scored
	for i, sc := range ranked {
		if !sc.sym.Test && len(code) < maxBodies && i < window {
			code = append(code, sc)
		} else {
			rest = append(rest, sc)
		}
	}
	return append(code, rest...), len(code)
}
