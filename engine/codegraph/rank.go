package codegraph

import (
	"cmp"
	"slices"
)

// Rank scores every symbol by PageRank over the reference graph,
// personalised to seeds (symbol ID → weight), in the manner of Aider's repo
// map: a symbol ranks high when much of the code around the seeds leads to
// it. Edges run both ways (a definition matters to its users and the users
// to it), the reverse direction at half weight. The computation visits
// nodes and edges in sorted order for a fixed number of rounds, so the same
// graph and seeds give bit-identical scores.
func (g *Graph) Rank(seeds map[string]float64) map[string]float64 {
	const (
		damping = 0.85
		rounds  = 30
		back    = 0.5
	)
	ids := g.ranked
	n := len(ids)
	if n == 0 {
		return map[string]float64{}
	}
	index := make(map[string]int, n)
	for i, id := range ids {
		index[id] = i
	}
	type arc struct {
		to int
		w  float64
	}
	adj := make([][]arc, n)
	outW := make([]float64, n)
	add := func(from, to int, w float64) {
		adj[from] = append(adj[from], arc{to, w})
		outW[from] += w
	}
	for i, id := range ids {
		for _, e := range g.out[id] {
			j, ok := index[e.To]
			if !ok || j == i {
				continue
			}
			add(i, j, 1)
			add(j, i, back)
		}
	}
	for i := range adj {
		slices.SortFunc(adj[i], func(a, b arc) int { return cmp.Compare(a.to, b.to) })
	}
	// Personalisation: the seeds, normalised; uniform when there are none.
	pers := make([]float64, n)
	var total float64
	seedIDs := make([]string, 0, len(seeds))
	for id := range seeds {
		seedIDs = append(seedIDs, id)
	}
	slices.Sort(seedIDs)
	for _, id := range seedIDs {
		if i, ok := index[id]; ok && seeds[id] > 0 {
			pers[i] += seeds[id]
			total += seeds[id]
		}
	}
	if total == 0 {
		for i := range pers {
			pers[i] = 1
		}
		total = float64(n)
	}
	for i := range pers {
		pers[i] /= total
	}
	rank := slices.Clone(pers)
	next := make([]float64, n)
	for range rounds {
		var dangling float64
		for i := range next {
			next[i] = 0
		}
		for i := range n {
			if outW[i] == 0 {
				dangling += rank[i]
				continue
			}
			share := rank[i] / outW[i]
			for _, a := range adj[i] {
				next[a.to] += damping * share * a.w
			}
		}
		for i := range n {
			next[i] += (1-damping)*pers[i] + damping*dangling*pers[i]
		}
		rank, next = next, rank
	}
	out := make(map[string]float64, n)
	for i, id := range ids {
		out[id] = rank[i]
	}
	return out
}
