package suite

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/bcode-dev/bcode/engine/bench"
)

// ReadTasks reads task definitions ([[task]] tables) from a TOML file, or
// from every *.toml file of a directory, strictly: an unknown key is an
// error. (The catalog's own loader, engine/bench's, replaces it once
// wired.)
func ReadTasks(path string) ([]bench.Task, error) {
	files := []string{path}
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %v", bench.ErrCatalog, err)
	} else if fi.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.toml")); err != nil {
			return nil, err
		}
		sort.Strings(files)
	}
	var tasks []bench.Task
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", bench.ErrCatalog, err)
		}
		var doc struct {
			Task []bench.Task `toml:"task"`
		}
		dec := toml.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", bench.ErrCatalog, f, err)
		}
		tasks = append(tasks, doc.Task...)
	}
	return tasks, nil
}

// SelectTasks are the tasks-suite tasks of split ("" for both) whose id
// only names (empty: all), in catalog order; an id of only that names no
// such task is an error that lists it.
func SelectTasks(all []bench.Task, split bench.Split, only []string) ([]bench.Task, error) {
	want, found := map[string]bool{}, map[string]bool{}
	for _, id := range only {
		want[strings.TrimSpace(id)] = true
	}
	var out []bench.Task
	for _, t := range all {
		if t.Suite != bench.SuiteTasks || (split != "" && t.Split != split) || (len(want) > 0 && !want[t.ID]) {
			continue
		}
		found[t.ID] = true
		out = append(out, t)
	}
	var missing []string
	for id := range want {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%w: no tasks-suite task %s in the %s split", bench.ErrCatalog, strings.Join(missing, ", "), orBoth(split))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no tasks-suite task in the %s split", bench.ErrCatalog, orBoth(split))
	}
	return out, nil
}

func orBoth(split bench.Split) string {
	if split == "" {
		return "dev or heldout"
	}
	return string(split)
}
