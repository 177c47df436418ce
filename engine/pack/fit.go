package pack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// item is one piece of a section: its preferred text and a shorter form to
// fall back to (a signature instead of a body), or none.
type item struct {
	label string // for the cut list: what this is
	full  string
	short string
	files []string
	// fullShown and shortShown are the functions each form shows, and how.
	fullShown, shortShown []Shown
	// group is the heading the item is listed under in a grouped section
	// (its file), and ring its one-line form there; an item spilled into
	// a grouped section takes its ring form.
	group, ring string
}

// candidate is a section before fitting.
type candidate struct {
	title  string
	reason string
	items  []item
	// share caps the section at this fraction of the budget, so one large
	// section cannot crowd out the rest; the last section takes what is
	// left. 0 means no cap.
	share float64
	// reserve is the fraction of the budget kept free for this section
	// while the sections before it are placed: the signature ring must
	// not be starved by the bodies at a small budget.
	reserve float64
	note    string // shown even when no item fits (e.g. why a section is empty)
	// spillTo is the title of a later section that takes, by their short
	// form and ahead of its own, the items that did not fit here: a
	// function ranked high must not vanish because the bodies before it
	// filled their share.
	spillTo string
	// grouped sections are placed item by item in order (so what is cut is
	// the lowest-ranked) but rendered under one heading per group, each
	// heading paid for by the group's first item: one file path for all
	// the signatures of that file.
	grouped bool
}

// fit plans the sections against the budget and then checks the whole
// rendering with the real counter, trimming from the end until it fits.
func (b *builder) fit(ctx context.Context) (*Pack, error) {
	budget := b.in.Budget
	plan := budget
	// Plan with the estimate, count the whole with the real counter, and
	// re-plan scaled by how far apart they were; keep the fullest plan
	// that fits. With the estimate itself one pass suffices.
	var p *Pack
	bestTotal := -1
	for pass := 0; pass < 4; pass++ {
		cand := b.plan(plan)
		total, err := b.count(ctx, Render(cand))
		if err != nil {
			return nil, err
		}
		switch {
		case total <= budget && total > bestTotal:
			p, bestTotal = cand, total
		case p == nil:
			p = cand // over budget: trimmed below unless a later pass fits
		}
		if _, est := b.in.Counter.(Estimate); est || total <= budget && total*100 >= budget*93 {
			break
		}
		next := int(int64(plan) * int64(budget) * 97 / 100 / int64(max(total, 1)))
		if next == plan {
			break
		}
		plan = next
	}
	// Trim until the counter agrees the whole fits.
	for {
		total, err := b.count(ctx, Render(p))
		if err != nil {
			return nil, err
		}
		p.Total = total
		if total <= budget || !dropLast(p) {
			break
		}
	}
	if p.Total > budget {
		return nil, fmt.Errorf("budget %d tokens is too small for even the pack's header (%d tokens)", budget, p.Total)
	}
	for i := range p.Sections {
		n, err := b.count(ctx, renderSection(&p.Sections[i]))
		if err != nil {
			return nil, err
		}
		p.Sections[i].Tokens = n
	}
	return p, nil
}

func (b *builder) count(ctx context.Context, text string) (int, error) {
	n, err := b.in.Counter.Count(ctx, text)
	if err != nil {
		// The tokenizer went away mid-build: fall back, say so.
		b.in.Counter = Estimate{}
		b.notes = append(b.notes, "tokenizer failed mid-build ("+shortErr(err)+"): switched to the estimate")
		return EstimateTokens(text), nil
	}
	return n, nil
}

// dropLast removes the last entry of the last non-empty section and
// records it as cut. It reports false when nothing is left to drop.
func dropLast(p *Pack) bool {
	for i := len(p.Sections) - 1; i >= 0; i-- {
		s := &p.Sections[i]
		if len(s.parts) == 0 {
			p.Sections = append(p.Sections[:i], p.Sections[i+1:]...)
			continue
		}
		s.parts = s.parts[:len(s.parts)-1]
		s.Text = strings.Join(s.parts, "")
		if n := len(s.partShown); n > 0 {
			s.partShown = s.partShown[:n-1]
			s.Symbols = nil
			for _, ps := range s.partShown {
				s.Symbols = append(s.Symbols, ps...)
			}
		}
		if len(s.parts) == 0 {
			p.Sections = append(p.Sections[:i], p.Sections[i+1:]...)
		}
		// One cut line per section however many entries the trimming
		// drops: each line costs tokens too.
		prefix := s.Title + ": last "
		if n := len(p.Cut); n > 0 && strings.HasPrefix(p.Cut[n-1], prefix) {
			k := 1
			fmt.Sscanf(strings.TrimPrefix(p.Cut[n-1], prefix), "%d", &k)
			p.Cut[n-1] = fmt.Sprintf("%s%d entries dropped to fit the counted total", prefix, k+1)
		} else {
			p.Cut = append(p.Cut, prefix+"1 entries dropped to fit the counted total")
		}
		return true
	}
	return false
}

// Token costs the planner reserves for the cut list.
const (
	cutHeadingCost = 12 // "## Cut to fit the budget"
	cutLineReserve = 20 // one "- Section: n of m entries cut" line
)

// plan fills sections in order with the estimate, at most budget tokens.
func (b *builder) plan(budget int) *Pack {
	goal, secrets := b.src.redact(b.in.Goal)
	p := &Pack{Goal: goal, Selection: b.sel, Budget: b.in.Budget, Counter: b.in.Counter.Name()}
	p.Notes = append([]string(nil), b.notes...)
	// Header, notes and the cut list's heading; each section then pays
	// for the cut lines it adds, and reserves room for one before it is
	// placed, so the cut list never pushes the whole over the budget.
	pl := &planner{b: b, p: p, budget: budget, secrets: secrets, spilled: map[string][]item{},
		used: EstimateTokens(Render(p)) + cutHeadingCost}
	for ci, c := range b.cands {
		for _, line := range p.Cut[pl.charged:] {
			pl.used += EstimateTokens("- " + line + "\n")
		}
		pl.charged = len(p.Cut)
		if sp := pl.spilled[c.title]; len(sp) > 0 {
			c.items = append(sp, c.items...)
		}
		pl.placeSection(c, pl.allowance(ci, c))
	}
	if pl.secrets > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d secret(s) redacted", pl.secrets))
	}
	return p
}

// planner is one plan's state while it places the sections in order.
type planner struct {
	b       *builder
	p       *Pack
	budget  int
	used    int               // tokens placed so far, with the cut lines charged
	charged int               // cut lines already charged to used
	secrets int               // secrets redacted so far
	spilled map[string][]item // section title → the items spilled to it
}

// allowance is what section ci may take: what is left, less a cut line
// and the reserves of the sections after it, and at most its share (but
// the last section takes what is left).
func (pl *planner) allowance(ci int, c candidate) int {
	remaining := pl.budget - pl.used - cutLineReserve
	for _, later := range pl.b.cands[ci+1:] {
		remaining -= int(later.reserve * float64(pl.budget))
	}
	allowed := remaining
	if c.share > 0 && ci < len(pl.b.cands)-1 {
		allowed = min(allowed, int(c.share*float64(pl.budget)))
	}
	return allowed
}

// place redacts text and reports its cost, or false when even the
// unredacted text does not fit in room (only what may be placed is
// scanned; redaction rarely grows text, and if it does the item is simply
// not placed).
func (pl *planner) place(text string, room int) (string, int, bool) {
	if EstimateTokens(text) > room {
		return "", 0, false
	}
	red, n := pl.b.src.redact(text)
	cost := EstimateTokens(red)
	if cost > room {
		return "", 0, false
	}
	pl.secrets += n
	return red, cost, true
}

func (pl *planner) spill(to string, it item) {
	pl.spilled[to] = append(pl.spilled[to], it)
}

// cut adds a line to the pack's cut list.
func (pl *planner) cut(format string, args ...any) {
	pl.p.Cut = append(pl.p.Cut, fmt.Sprintf(format, args...))
}

// sectionFill is one section being filled.
type sectionFill struct {
	s                  Section
	text               strings.Builder
	files              map[string]bool
	cost, allowed      int
	shortened, dropped int
}

// add places an entry's redacted text, showing shown, at cost n.
func (f *sectionFill) add(red string, n int, shown []Shown) {
	f.text.WriteString(red)
	f.s.parts = append(f.s.parts, red)
	f.s.partShown = append(f.s.partShown, shown)
	f.s.Symbols = append(f.s.Symbols, shown...)
	f.cost += n
}

// placeSection fills section c within allowed tokens and adds it to the
// pack (unless nothing of it was placed), listing what it cut.
func (pl *planner) placeSection(c candidate, allowed int) {
	f := &sectionFill{s: Section{Title: c.title, Reason: c.reason}, files: map[string]bool{}, allowed: allowed}
	if c.note != "" {
		f.text.WriteString("_" + c.note + "_\n")
		f.s.parts = append(f.s.parts, "_"+c.note+"_\n")
		f.s.partShown = append(f.s.partShown, nil)
	}
	base := EstimateTokens(renderSection(&Section{Title: c.title, Reason: c.reason, Text: f.text.String()}))
	if base > allowed {
		pl.noRoom(c)
		return
	}
	f.cost = base
	if c.grouped {
		var dropped int
		f.cost, dropped = pl.b.placeGrouped(c, &f.s, f.files, pl.place, allowed, f.cost)
		if dropped > 0 {
			pl.cut("%s: %d of %d entries cut (over budget)", c.title, dropped, len(c.items))
		}
		if len(f.s.parts) == 0 {
			return
		}
		f.s.Text = strings.Join(f.s.parts, "")
		pl.addSection(f)
		return
	}
	for _, it := range c.items {
		pl.placeItem(c, f, it)
	}
	if f.shortened > 0 {
		pl.cut("%s: %d shown as signatures only (bodies over budget)", c.title, f.shortened)
	}
	if f.dropped > 0 {
		pl.cut("%s: %d of %d entries cut (over budget)", c.title, f.dropped, len(c.items))
	}
	if f.text.Len() == 0 {
		return
	}
	f.s.Text = f.text.String()
	pl.addSection(f)
}

// noRoom handles a section that does not fit at all: its items still go
// to the section that takes its spills, or it is listed as cut.
func (pl *planner) noRoom(c candidate) {
	if c.spillTo != "" {
		for _, it := range c.items {
			if it.ring != "" {
				pl.spill(c.spillTo, it)
			}
		}
		return
	}
	if len(c.items) > 0 || c.note != "" {
		pl.cut("%s: whole section (no room left in the budget)", c.title)
	}
}

// placeItem places it in the section by its full form, else by its short
// one (counted as shortened). In a section that spills, an item without a
// body, or whose body does not fit, goes to the spill section as one line
// instead; one that fits in neither form is dropped.
func (pl *planner) placeItem(c candidate, f *sectionFill, it item) {
	if it.full == "" && c.spillTo != "" && it.ring != "" {
		pl.spill(c.spillTo, it)
		return
	}
	if red, n, ok := pl.place(it.full+"\n", f.allowed-f.cost); ok && it.full != "" {
		f.add(red, n, it.fullShown)
	} else if c.spillTo != "" && it.ring != "" {
		// A body that does not fit goes to the grouped ring as one
		// line, cheaper than its long signature form here.
		pl.spill(c.spillTo, it)
		return
	} else if red, n, ok := pl.place(it.short+"\n", f.allowed-f.cost); ok && it.short != "" {
		f.add(red, n, it.shortShown)
		if it.short != it.full {
			f.shortened++
		}
	} else if c.spillTo != "" && it.short != "" {
		pl.spill(c.spillTo, ringForm(it))
		return
	} else {
		f.dropped++
		return
	}
	for _, file := range it.files {
		f.files[file] = true
	}
}

// ringForm is it as one line of a grouped section: its ring form, else
// its short one.
func ringForm(it item) item {
	ring := it.ring
	if ring == "" {
		ring = it.short
	}
	return item{label: it.label, full: ring, short: ring, files: it.files, fullShown: it.shortShown, shortShown: it.shortShown, group: it.group, ring: ring}
}

// addSection adds a filled section to the pack and charges its cost.
func (pl *planner) addSection(f *sectionFill) {
	f.s.Files = sortedSet(f.files)
	f.s.Tokens = f.cost
	pl.used += f.cost
	pl.p.Sections = append(pl.p.Sections, f.s)
}

// Render is the pack as markdown: what the agent reads and the LSP preview
// shows.
func Render(p *Pack) string {
	var b strings.Builder
	b.WriteString("# Context pack\n\n")
	if p.Goal != "" {
		b.WriteString("Goal: " + oneLineText(p.Goal) + "\n")
	}
	if p.Selection != nil {
		fmt.Fprintf(&b, "Selection: %s:%d-%d\n", p.Selection.File, p.Selection.StartLine, p.Selection.EndLine)
	}
	fmt.Fprintf(&b, "Budget: %d tokens (%s)\n", p.Budget, p.Counter)
	for _, n := range p.Notes {
		b.WriteString("Note: " + n + "\n")
	}
	for i := range p.Sections {
		b.WriteString("\n")
		b.WriteString(renderSection(&p.Sections[i]))
	}
	if len(p.Cut) > 0 {
		b.WriteString("\n## Cut to fit the budget\n")
		for _, c := range p.Cut {
			b.WriteString("- " + c + "\n")
		}
	}
	return b.String()
}

func renderSection(s *Section) string {
	return "## " + s.Title + "\n_" + s.Reason + "_\n\n" + s.Text
}

// JSON is the pack as indented JSON.
func JSON(p *Pack) ([]byte, error) { return json.MarshalIndent(p, "", "  ") }

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// placeGrouped places a grouped section's items in order, each by its ring
// form (else its short form), charging a group's heading to its first
// placed item, and leaves one part per line in s, groups in the order
// their first item was placed. It returns the section's cost and how many
// items did not fit.
func (b *builder) placeGrouped(c candidate, s *Section, files map[string]bool, place func(string, int) (string, int, bool), allowed, cost int) (int, int) {
	type group struct {
		lines []string  // the first with the group's heading
		shown [][]Shown // per line
	}
	var order []string
	groups := map[string]*group{}
	dropped := 0
	for _, it := range c.items {
		line := it.ring
		if line == "" {
			line = it.short
		}
		if line == "" {
			dropped++
			continue
		}
		g := groups[it.group]
		head := ""
		if g == nil {
			head = it.group + ":\n"
			if it.group == "" {
				head = ""
			}
		}
		red, n, ok := place(head+line+"\n", allowed-cost)
		if !ok {
			dropped++
			continue
		}
		if g == nil {
			g = &group{}
			groups[it.group] = g
			order = append(order, it.group)
		}
		g.lines = append(g.lines, red)
		g.shown = append(g.shown, it.shortShown)
		cost += n
		for _, f := range it.files {
			files[f] = true
		}
	}
	// One part per line, grouped, so trimming drops the last line, not
	// a whole group.
	for _, k := range order {
		g := groups[k]
		for i, line := range g.lines {
			s.parts = append(s.parts, line)
			s.partShown = append(s.partShown, g.shown[i])
			s.Symbols = append(s.Symbols, g.shown[i]...)
		}
	}
	return cost, dropped
}
