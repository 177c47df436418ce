package score

import "github.com/bcode-dev/bcode/engine/bench"

// count is successes out of trials.
type count struct{ successes, trials int }

func (c *count) add(success bool) {
	c.trials++
	if success {
		c.successes++
	}
}

// tally counts one rate overall and per group, language and split.
type tally struct {
	overall  count
	group    map[bench.Group]*count
	language map[string]*count
	split    map[bench.Split]*count
}

func newTally() *tally {
	return &tally{group: map[bench.Group]*count{}, language: map[string]*count{}, split: map[bench.Split]*count{}}
}

func (t *tally) add(task bench.Task, success bool) {
	t.overall.add(success)
	at(t.group, task.Group).add(success)
	at(t.language, task.Language).add(success)
	at(t.split, task.Split).add(success)
}

// at is m[k], made on first use.
func at[K comparable](m map[K]*count, k K) *count {
	if m[k] == nil {
		m[k] = &count{}
	}
	return m[k]
}

func (t *tally) breakdown() (Breakdown, error) {
	overall, err := NewRate(t.overall.successes, t.overall.trials)
	if err != nil {
		return Breakdown{}, err
	}
	b := Breakdown{Overall: overall}
	if b.Group, err = rates(t.group); err != nil {
		return Breakdown{}, err
	}
	if b.Language, err = rates(t.language); err != nil {
		return Breakdown{}, err
	}
	b.Split, err = rates(t.split)
	return b, err
}

func rates[K comparable](m map[K]*count) (map[K]Rate, error) {
	out := make(map[K]Rate, len(m))
	for k, c := range m {
		r, err := NewRate(c.successes, c.trials)
		if err != nil {
			return nil, err
		}
		out[k] = r
	}
	return out, nil
}
