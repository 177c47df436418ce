package bench

import (
	"fmt"
	"time"
)

// Counts are a catalog's tasks counted per group, split and provenance,
// and (given a model's publication date) per group of those public
// before it: a model may have seen those in training.
type Counts struct {
	Total      int                     `json:"total"`
	Groups     map[Group]map[Split]int `json:"groups"`
	Splits     map[Split]int           `json:"splits"`
	Provenance map[string]int          `json:"provenance"` // by kind
	Before     string                  `json:"before,omitempty"`
	// PublicBefore counts, per group, the tasks whose provenance date is
	// before Before (set only with it).
	PublicBefore map[Group]int `json:"public_before,omitempty"`
}

// Count counts tasks; before is "" or a YYYY-MM-DD date.
func Count(tasks []Task, before string) (Counts, error) {
	c := Counts{Total: len(tasks), Groups: map[Group]map[Split]int{}, Splits: map[Split]int{}, Provenance: map[string]int{}}
	var cut time.Time
	if before != "" {
		var err error
		if cut, err = time.Parse(time.DateOnly, before); err != nil {
			return c, fmt.Errorf("%w: before %q: want YYYY-MM-DD", ErrCatalog, before)
		}
		c.Before, c.PublicBefore = before, map[Group]int{}
		for _, g := range Groups {
			c.PublicBefore[g] = 0
		}
	}
	for _, g := range Groups {
		c.Groups[g] = map[Split]int{SplitDev: 0, SplitHeldout: 0}
	}
	for _, t := range tasks {
		if c.Groups[t.Group] == nil {
			c.Groups[t.Group] = map[Split]int{}
		}
		c.Groups[t.Group][t.Split]++
		c.Splits[t.Split]++
		c.Provenance[t.Provenance.Kind]++
		if d, err := time.Parse(time.DateOnly, t.Provenance.Date); before != "" && err == nil && d.Before(cut) {
			c.PublicBefore[t.Group]++
		}
	}
	return c, nil
}
