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
	// Header, notes, the redaction note and the cut list's heading.
	// Header, notes and the cut list's heading; each section then pays
	// for the cut lines it adds, and reserves room for one before it is
	// placed, so the cut list never pushes the whole over the budget.
	used := EstimateTokens(Render(p)) + cutHeadingCost
	defer func() {
		if secrets > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("%d secret(s) redacted", secrets))
		}
	}()
	// place redacts text and reports its cost, or false when even the
	// unredacted text does not fit in room (only what may be placed is
	// scanned; redaction rarely grows text, and if it does the item is
	// simply not placed).
	place := func(text string, room int) (string, int, bool) {
		if EstimateTokens(text) > room {
			return "", 0, false
		}
		red, n := b.src.redact(text)
		cost := EstimateTokens(red)
		if cost > room {
			return "", 0, false
		}
		secrets += n
		return red, cost, true
	}
	spilled := map[string][]item{}
	charged := 0 // cut lines already charged to used
	for ci, c := range b.cands {
		for _, line := range p.Cut[charged:] {
			used += EstimateTokens("- " + line + "\n")
		}
		charged = len(p.Cut)
		if sp := spilled[c.title]; len(sp) > 0 {
			c.items = append(sp, c.items...)
		}
		remaining := budget - used - cutLineReserve
		for _, later := range b.cands[ci+1:] {
			remaining -= int(later.reserve * float64(budget))
		}
		allowed := remaining
		if c.share > 0 && ci < len(b.cands)-1 {
			allowed = min(allowed, int(c.share*float64(budget)))
		}
		s := Section{Title: c.title, Reason: c.reason}
		files := map[string]bool{}
		var text strings.Builder
		if c.note != "" {
			text.WriteString("_" + c.note + "_\n")
			s.parts = append(s.parts, "_"+c.note+"_\n")
			s.partShown = append(s.partShown, nil)
		}
		base := EstimateTokens(renderSection(&Section{Title: c.title, Reason: c.reason, Text: text.String()}))
		if base > allowed {
			if c.spillTo != "" {
				// No room for the section: its items still go to the
				// section that takes its spills.
				for _, it := range c.items {
					if it.ring != "" {
						spilled[c.spillTo] = append(spilled[c.spillTo], it)
					}
				}
				continue
			}
			if len(c.items) > 0 || c.note != "" {
				p.Cut = append(p.Cut, fmt.Sprintf("%s: whole section (no room left in the budget)", c.title))
			}
			continue
		}
		cost := base
		shortened, dropped := 0, 0
		if c.grouped {
			cost, dropped = b.placeGrouped(c, &s, files, place, allowed, cost)
			if dropped > 0 {
				p.Cut = append(p.Cut, fmt.Sprintf("%s: %d of %d entries cut (over budget)", c.title, dropped, len(c.items)))
			}
			if len(s.parts) == 0 {
				continue
			}
			s.Text = strings.Join(s.parts, "")
			s.Files = sortedSet(files)
			s.Tokens = cost
			used += cost
			p.Sections = append(p.Sections, s)
			continue
		}
		for _, it := range c.items {
			if it.full == "" && c.spillTo != "" && it.ring != "" {
				spilled[c.spillTo] = append(spilled[c.spillTo], it)
				continue
			}
			if red, n, ok := place(it.full+"\n", allowed-cost); ok && it.full != "" {
				text.WriteString(red)
				s.parts = append(s.parts, red)
				s.partShown = append(s.partShown, it.fullShown)
				s.Symbols = append(s.Symbols, it.fullShown...)
				cost += n
			} else if c.spillTo != "" && it.ring != "" {
				// A body that does not fit goes to the grouped ring as one
				// line, cheaper than its long signature form here.
				spilled[c.spillTo] = append(spilled[c.spillTo], it)
				continue
			} else if red, n, ok := place(it.short+"\n", allowed-cost); ok && it.short != "" {
				text.WriteString(red)
				s.parts = append(s.parts, red)
				s.partShown = append(s.partShown, it.shortShown)
				s.Symbols = append(s.Symbols, it.shortShown...)
				cost += n
				if it.short != it.full {
					shortened++
				}
			} else if c.spillTo != "" && it.short != "" {
				ring := it.ring
				if ring == "" {
					ring = it.short
				}
				spilled[c.spillTo] = append(spilled[c.spillTo], item{label: it.label, full: ring, short: ring, files: it.files, fullShown: it.shortShown, shortShown: it.shortShown, group: it.group, ring: ring})
				continue
			} else {
				dropped++
				continue
			}
			for _, f := range it.files {
				files[f] = true
			}
		}
		if shortened > 0 {
			p.Cut = append(p.Cut, fmt.Sprintf("%s: %d shown as signatures only (bodies over budget)", c.title, shortened))
		}
		if dropped > 0 {
			p.Cut = append(p.Cut, fmt.Sprintf("%s: %d of %d entries cut (over budget)", c.title, dropped, len(c.items)))
		}
		if text.Len() == 0 {
			continue
		}
		s.Text = text.String()
		s.Files = sortedSet(files)
		s.Tokens = cost
		used += cost
		p.Sections = append(p.Sections, s)
	}
	return p
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
