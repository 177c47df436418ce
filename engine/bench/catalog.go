package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// CatalogDir is where the catalog lives, relative to the module root: one
// TOML file per group, each a list of [[task]] tables
// (docs/evaluation.md, "The catalog").
const CatalogDir = "engine/bench/catalog"

// catalogFile is one file of the catalog.
type catalogFile struct {
	Task []Task `toml:"task"`
}

// LoadCatalog reads every *.toml file of the catalog under moduleRoot, in
// file order and, within a file, in the order written. A file that does
// not parse, or names a key no Task has, is an error naming the file: a
// typo must not silently drop a field. Whether the tasks are sound is
// CheckCatalog's question, so a catalog with problems still loads.
func LoadCatalog(moduleRoot string) ([]Task, error) {
	paths, err := filepath.Glob(filepath.Join(moduleRoot, CatalogDir, "*.toml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no *.toml files in %s", ErrCatalog, filepath.Join(moduleRoot, CatalogDir))
	}
	sort.Strings(paths)
	var tasks []Task
	for _, p := range paths {
		ts, err := loadCatalogFile(p)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, ts...)
	}
	return tasks, nil
}

func loadCatalogFile(path string) ([]Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCatalog, err)
	}
	var f catalogFile
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return nil, fmt.Errorf("%w: %s: %s", ErrCatalog, path, strict.String())
		}
		var derr *toml.DecodeError
		if errors.As(err, &derr) {
			row, col := derr.Position()
			return nil, fmt.Errorf("%w: %s:%d:%d: %v", ErrCatalog, path, row, col, derr)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrCatalog, path, err)
	}
	return f.Task, nil
}

// TasksHash is the SHA-256 of the task definitions, in hex: their JSON,
// sorted by id, so two runs over the same tasks in any order agree and a
// changed field (a goal, a check, a label) changes it.
func TasksHash(tasks []Task) string {
	sorted := append([]Task(nil), tasks...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	data, err := json.Marshal(sorted)
	if err != nil {
		panic(err) // a Task is plain data: it always encodes
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// FixtureHash is the SHA-256 of the task's fixture file, in hex.
func FixtureHash(moduleRoot string, t Task) (string, error) {
	if !cleanRel(t.Fixture) {
		return "", fmt.Errorf("%w: task %s: fixture %q is not a path inside the checkout", ErrFixture, t.ID, t.Fixture)
	}
	data, err := os.ReadFile(fixturePath(moduleRoot, t))
	if err != nil {
		return "", fmt.Errorf("%w: task %s: %v", ErrFixture, t.ID, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// FixtureHashes is FixtureHash of every task, by task id, as a Report
// records them.
func FixtureHashes(moduleRoot string, tasks []Task) (map[string]string, error) {
	out := make(map[string]string, len(tasks))
	for _, t := range tasks {
		h, err := FixtureHash(moduleRoot, t)
		if err != nil {
			return nil, err
		}
		out[t.ID] = h
	}
	return out, nil
}

func fixturePath(moduleRoot string, t Task) string {
	return filepath.Join(moduleRoot, filepath.FromSlash(t.Fixture))
}

// Select is the tasks of suite in split ("" or "all": every split) whose
// id is in only (nil: every one). An id in only that names no such task
// is an error, so a typo never runs an empty selection.
func Select(tasks []Task, suite Suite, split string, only []string) ([]Task, error) {
	if split != "" && split != "all" && split != string(SplitDev) && split != string(SplitHeldout) {
		return nil, fmt.Errorf("%w: split %q: want dev, heldout or all", ErrCatalog, split)
	}
	want := map[string]bool{}
	for _, id := range only {
		want[strings.TrimSpace(id)] = true
	}
	var out []Task
	found := map[string]bool{}
	for _, t := range tasks {
		if t.Suite != suite || (split != "" && split != "all" && string(t.Split) != split) {
			continue
		}
		if len(want) > 0 && !want[t.ID] {
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
		return nil, fmt.Errorf("%w: no %s task in split %s with id %s", ErrCatalog, suite, orAll(split), strings.Join(missing, ", "))
	}
	return out, nil
}

func orAll(split string) string {
	if split == "" {
		return "all"
	}
	return split
}
