package golang

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// listedPackage is the part of `go list -json` output Targets needs.
type listedPackage struct {
	ImportPath   string
	Dir          string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Module       *struct {
		Path string
		Dir  string
	}
	rel string // Dir relative to the snapshot, slash-separated
}

// graph is the import graph of every module of a snapshot.
type graph struct {
	pkgs     []*listedPackage
	byImport map[string]*listedPackage
	byRel    map[string]*listedPackage
	modules  map[string]string // module root (relative) → module path
}

// listPackages runs `go list` in each module root of l and merges the
// results into one graph, so reverse dependencies across the modules of a
// workspace are found too.
func (a *Adapter) listPackages(ctx context.Context, r sandbox.Runner, dir string, l layout) (*graph, error) {
	g := &graph{byImport: map[string]*listedPackage{}, byRel: map[string]*listedPackage{}, modules: map[string]string{}}
	bases := absDirs(dir)
	for _, root := range l.Roots {
		cwd, env, flags := a.goCommand(dir, l, root)
		args := append(append([]string{a.goBin(), "list"}, flags...), "-e", "-json=ImportPath,Dir,Imports,TestImports,XTestImports,Module", "./...")
		res, err := r.Run(ctx, sandbox.Command{Dir: cwd, Args: args, Env: env})
		if errors.Is(err, sandbox.ErrNotFound) {
			return nil, fmt.Errorf("go adapter: %s not found: %s", a.goBin(), installHint)
		}
		if err != nil {
			return nil, fmt.Errorf("go adapter: go list in %s: %w", root, err)
		}
		if res.ExitCode != 0 {
			a.note("go: skipped module %s: go list failed: %s", root, excerpt(string(res.Stderr)))
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(res.Stdout))
		for {
			var p listedPackage
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("go adapter: reading go list output in %s: %w", root, err)
			}
			rel, ok := relTo(bases, p.Dir)
			if !ok || g.byImport[p.ImportPath] != nil {
				continue
			}
			p.rel = rel
			g.pkgs = append(g.pkgs, &p)
			g.byImport[p.ImportPath] = &p
			g.byRel[rel] = &p
			if p.Module != nil && p.Module.Path != "" {
				if mr, ok := relTo(bases, p.Module.Dir); ok {
					g.modules[mr] = p.Module.Path
				}
			}
		}
	}
	return g, nil
}

// importPathOf is the import path a directory has (or had) within its
// module, for packages that no longer exist on this side.
func (g *graph) importPathOf(roots []string, rel string) (string, bool) {
	root := rootOf(roots, rel)
	mod, ok := g.modules[root]
	if root == "" || !ok {
		return "", false
	}
	if rel == root {
		return mod, true
	}
	sub := rel
	if root != "." {
		sub = strings.TrimPrefix(rel, root+"/")
	}
	return mod + "/" + sub, true
}

// Targets implements verify.Adapter: the packages holding changed Go files
// (or files they may embed), every package that imports them directly or
// transitively, and every package whose tests import any of those. A change
// to go.mod, go.sum or go.work reaches every package of the module.
func (a *Adapter) Targets(ctx context.Context, r sandbox.Runner, dir string, change *verify.Change) ([]string, error) {
	if r == nil || change == nil {
		return nil, errors.New("go adapter: Targets needs a runner and a change")
	}
	l, err := findModules(dir)
	if err != nil {
		return nil, fmt.Errorf("go adapter: finding Go modules in %s: %w", dir, err)
	}
	for _, s := range l.Skipped {
		a.note("go: %s; its packages are not targeted", s)
	}
	if len(l.Roots) == 0 {
		return nil, nil
	}
	if len(change.Files) == 0 {
		return nil, nil
	}
	g, err := a.listPackages(ctx, r, dir, l)
	if err != nil {
		return nil, err
	}

	reach, targets := g.changedPackages(l, change.Files)
	g.addImporters(reach)
	for ip := range reach {
		targets[ip] = true
	}
	for _, p := range g.pkgs {
		for _, imp := range append(append([]string(nil), p.TestImports...), p.XTestImports...) {
			if reach[imp] {
				targets[p.ImportPath] = true
				break
			}
		}
	}

	var out []string
	for ip := range targets {
		if p := g.byImport[ip]; p != nil {
			out = append(out, packageOfDir(p.rel))
		}
	}
	sort.Strings(out)
	return out, nil
}

// changedPackages sorts the changed files into reach, the import paths
// whose non-test code changed, and targets, those whose tests must run (a
// change to go.mod, go.sum or go.work: every package of the module or
// workspace).
func (g *graph) changedPackages(l layout, files []verify.FileChange) (reach, targets map[string]bool) {
	reach, targets = map[string]bool{}, map[string]bool{}
	everything := map[string]bool{}
	for _, f := range files {
		base := path.Base(f.Path)
		d := path.Dir(f.Path)
		switch {
		case base == "go.work" || base == "go.work.sum":
			everything["*"] = true
		case base == "go.mod" || base == "go.sum":
			everything[d] = true
		case strings.HasSuffix(f.Path, "_test.go"):
			if p := g.byRel[d]; p != nil {
				targets[p.ImportPath] = true
			}
		case strings.HasSuffix(f.Path, ".go"):
			if p := g.byRel[d]; p != nil {
				reach[p.ImportPath] = true
			} else if ip, ok := g.importPathOf(l.Roots, d); ok {
				// A deleted package: whoever still imports it breaks.
				reach[ip] = true
			}
		default:
			g.dataOf(d, reach, targets)
		}
	}
	for _, p := range g.pkgs {
		if everything["*"] || everything[rootOf(l.Roots, p.rel)] {
			targets[p.ImportPath] = true
		}
	}
	return reach, targets
}

// dataOf places a changed file of directory d that is not Go: data a
// package may embed or read in its tests, in its own directory (reach), or
// in a testdata directory below it (targets).
func (g *graph) dataOf(d string, reach, targets map[string]bool) {
	if p := g.byRel[d]; p != nil {
		reach[p.ImportPath] = true
		return
	}
	i := strings.Index("/"+d+"/", "/testdata/")
	if i < 0 {
		return
	}
	owner := strings.TrimSuffix(("/" + d + "/")[:i], "/")
	owner = strings.TrimPrefix(owner, "/")
	if owner == "" {
		owner = "."
	}
	if p := g.byRel[owner]; p != nil {
		targets[p.ImportPath] = true
	}
}

// addImporters adds to reach every package that imports one of it, directly
// or transitively, by non-test imports.
func (g *graph) addImporters(reach map[string]bool) {
	importers := map[string][]string{}
	for _, p := range g.pkgs {
		for _, imp := range p.Imports {
			importers[imp] = append(importers[imp], p.ImportPath)
		}
	}
	queue := make([]string, 0, len(reach))
	for ip := range reach {
		queue = append(queue, ip)
	}
	for len(queue) > 0 {
		ip := queue[0]
		queue = queue[1:]
		for _, by := range importers[ip] {
			if !reach[by] {
				reach[by] = true
				queue = append(queue, by)
			}
		}
	}
}
