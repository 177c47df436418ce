// Command notices writes THIRD_PARTY_NOTICES.md: every Go module linked into
// the binaries bcode ships and every npm package bundled into the VS Code
// extension, with its licence, and fails when a licence is not one the
// project (Apache-2.0) can ship.
//
//	go run ./internal/notices -w    # regenerate the file
//	go run ./internal/notices       # check that it is current (CI)
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// shipped are the binaries whose dependencies we redistribute.
var shipped = []string{"./cmd/bcode", "./cmd/bcode-ls", "./cmd/bcode-agent"}

// platforms: a dependency may be linked on one OS only (x/sys/windows).
var platforms = []string{"linux", "darwin", "windows"}

// allowed licences can be combined with Apache-2.0 and shipped in binary form.
var allowed = map[string]bool{
	"Apache-2.0": true, "MIT": true, "BSD-2-Clause": true, "BSD-3-Clause": true, "ISC": true,
	"MPL-2.0": true, "0BSD": true, "Unlicense": true, "CC0-1.0": true, "Zlib": true, "BlueOak-1.0.0": true,
}

// component is one shipped third-party component.
type component struct {
	Kind    string // "go" or "npm"
	Name    string
	Version string
	License string
}

func main() {
	write := flag.Bool("w", false, "write THIRD_PARTY_NOTICES.md instead of checking it")
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	if err := run(*root, *write, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
}

func run(root string, write bool, out io.Writer) error {
	comps, err := collect(root)
	if err != nil {
		return err
	}
	var bad []string
	for _, c := range comps {
		if !shippable(c.License) {
			bad = append(bad, fmt.Sprintf("%s %s@%s: licence %q is not on the allowed list", c.Kind, c.Name, c.Version, c.License))
		}
	}
	text := render(comps)
	path := filepath.Join(root, "THIRD_PARTY_NOTICES.md")
	if write {
		if err := os.WriteFile(path, text, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s: %d components\n", path, len(comps))
	} else {
		have, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%w (generate it with: go run ./internal/notices -w)", err)
		}
		if !bytes.Equal(have, text) {
			return errors.New("THIRD_PARTY_NOTICES.md is out of date: run go run ./internal/notices -w and commit it")
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "\n"))
	}
	return nil
}

func collect(root string) ([]component, error) {
	goComps, err := goModules(root)
	if err != nil {
		return nil, err
	}
	npmComps, err := npmPackages(root)
	if err != nil {
		return nil, err
	}
	all := append(goComps, npmComps...)
	sort.Slice(all, func(i, j int) bool {
		if all[i].Kind != all[j].Kind {
			return all[i].Kind < all[j].Kind
		}
		return all[i].Name < all[j].Name
	})
	return all, nil
}

type listedPkg struct {
	Standard bool
	Module   *struct {
		Path    string
		Version string
		Dir     string
		Main    bool
		Replace *struct {
			Path, Version, Dir string
		}
	}
}

func goModules(root string) ([]component, error) {
	seen := map[string]component{}
	var cmds []string
	for _, c := range shipped {
		if m, _ := filepath.Glob(filepath.Join(root, c, "*.go")); len(m) > 0 {
			cmds = append(cmds, c)
		}
	}
	for _, goos := range platforms {
		args := append([]string{"list", "-deps", "-json=Standard,Module"}, cmds...)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list (GOOS=%s): %v: %s", goos, err, stderr.String())
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p listedPkg
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				return nil, err
			}
			if p.Standard || p.Module == nil || p.Module.Main {
				continue
			}
			m := p.Module
			dir, version := m.Dir, m.Version
			if m.Replace != nil {
				dir, version = m.Replace.Dir, m.Replace.Version
			}
			if _, ok := seen[m.Path]; ok {
				continue
			}
			lic, err := licenseOf(dir)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.Path, err)
			}
			seen[m.Path] = component{Kind: "go", Name: m.Path, Version: version, License: lic}
		}
	}
	var out []component
	for _, c := range seen {
		out = append(out, c)
	}
	return out, nil
}

var licenseFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying)(\.(md|txt))?$`)

// licenseOf classifies the licence file at the root of a module. It reads
// the text rather than trusting a metadata field, which Go modules lack.
func licenseOf(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() || !licenseFile.MatchString(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", err
		}
		return classify(string(b)), nil
	}
	return "", errors.New("no LICENSE file at the module root")
}

// classify names every licence whose text appears in a licence file, as an
// SPDX expression: a file holding several (gopkg.in/yaml.v3 is MIT and
// Apache-2.0; klauspost/compress bundles BSD and MIT code under its
// Apache-2.0) is under all of them, so each must be one we can ship.
func classify(text string) string {
	t := strings.Join(strings.Fields(text), " ")
	has := func(s string) bool { return strings.Contains(t, s) }
	var found []string
	if has("Apache License") && has("Version 2.0") {
		found = append(found, "Apache-2.0")
	}
	if has("Mozilla Public License") && has("2.0") {
		found = append(found, "MPL-2.0")
	}
	if has("Permission is hereby granted, free of charge") {
		found = append(found, "MIT")
	}
	if has("Redistribution and use in source and binary forms") {
		if has("Neither the name") || has("names of its contributors") || has("name of the copyright holder") {
			found = append(found, "BSD-3-Clause")
		} else {
			found = append(found, "BSD-2-Clause")
		}
	}
	if has("Permission to use, copy, modify, and/or distribute this software for any purpose with or without fee") {
		if has("copyright notice and this permission notice appear") {
			found = append(found, "ISC")
		} else {
			found = append(found, "0BSD")
		}
	}
	if has("This is free and unencumbered software released into the public domain") {
		found = append(found, "Unlicense")
	}
	if has("Creative Commons") && has("CC0 1.0 Universal") {
		found = append(found, "CC0-1.0")
	}
	switch {
	case has("GNU AFFERO GENERAL PUBLIC LICENSE"):
		found = append(found, "AGPL")
	case has("GNU LESSER GENERAL PUBLIC LICENSE"):
		found = append(found, "LGPL")
	case has("GNU GENERAL PUBLIC LICENSE"):
		found = append(found, "GPL")
	}
	if len(found) == 0 {
		return "unknown"
	}
	return strings.Join(found, " AND ")
}

// shippable reports whether an SPDX expression of the forms the lockfile
// and classify produce ("MIT", "A AND B", "(A OR B)", "A OR B AND C") only
// needs licences on the allowed list: every AND term must hold, and an OR
// needs one allowed choice.
func shippable(expr string) bool {
	expr = strings.NewReplacer("(", " ", ")", " ").Replace(expr)
	for _, term := range strings.Split(expr, " AND ") {
		ok := false
		for _, choice := range strings.Split(term, " OR ") {
			if allowed[strings.TrimSpace(choice)] {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// npmPackages lists the non-dev packages of the extension's lockfile: the
// ones esbuild bundles into the .vsix.
func npmPackages(root string) ([]component, error) {
	b, err := os.ReadFile(filepath.Join(root, "vscode-extension", "package-lock.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
			License string `json:"license"`
			Dev     bool   `json:"dev"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return nil, fmt.Errorf("vscode-extension/package-lock.json: %w", err)
	}
	var out []component
	for key, p := range lock.Packages {
		if key == "" || p.Dev {
			continue
		}
		name := key[strings.LastIndex(key, "node_modules/")+len("node_modules/"):]
		lic := p.License
		if lic == "" {
			lic = "unknown"
		}
		out = append(out, component{Kind: "npm", Name: name, Version: p.Version, License: lic})
	}
	return out, nil
}

func render(comps []component) []byte {
	var b bytes.Buffer
	b.WriteString("# Third-party notices\n\n")
	b.WriteString("Generated by `go run ./internal/notices -w`; CI fails when it is out of date or when a licence is not\n")
	b.WriteString("one bcode (Apache-2.0) can ship. It lists the Go modules linked into `bcode`, `bcode-ls` and `bcode-agent`\n")
	b.WriteString("(on linux, darwin and windows) and the npm packages bundled into the VS Code extension.\n\n")
	b.WriteString("| kind | component | version | licence |\n|---|---|---|---|\n")
	for _, c := range comps {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Kind, c.Name, c.Version, c.License)
	}
	return b.Bytes()
}
