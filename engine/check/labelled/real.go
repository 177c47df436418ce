package labelled

import (
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/tools/txtar"
)

// LoadReal reads the real corpus (engine/check/testdata/real): cases as
// Load reads them, with each variant resolved against the case it names in
// from: its base is that case's base, its head that case's head with the
// variant's head files written over it, and a head file whose content is
// "<base>" goes back to the base's version (the fix dropped).
func LoadReal(dir string) ([]Case, error) {
	cases, err := Load(dir)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]Case, len(cases))
	for _, c := range cases {
		byName[c.Name] = c
	}
	for i, c := range cases {
		if c.From == "" {
			continue
		}
		parent, ok := byName[c.From]
		if !ok {
			return nil, fmt.Errorf("%s: from: %q is not a case in %s", c.Name, c.From, dir)
		}
		if parent.From != "" {
			return nil, fmt.Errorf("%s: from: %q is itself a variant; start from a real case", c.Name, c.From)
		}
		cases[i] = resolveVariant(c, parent)
	}
	return cases, nil
}

func resolveVariant(v, parent Case) Case {
	base := overlay(parent.Base, v.Base)
	head := overlay(parent.Head, v.Head)
	for i, f := range head {
		if string(bytes.TrimSpace(f.Data)) != "<base>" {
			continue
		}
		head[i].Data = []byte("<deleted>\n")
		for _, b := range base {
			if b.Name == f.Name {
				head[i].Data = b.Data
			}
		}
	}
	v.Base, v.Head = base, head
	if v.Source == "" {
		v.Source, v.Commit = parent.Source, parent.Commit
	}
	for _, f := range append(append([]txtar.File(nil), base...), head...) {
		if strings.HasSuffix(f.Name, ".py") {
			v.Python = true
		}
	}
	return v
}

// overlay is files with over's files replacing those of the same name and
// the rest appended, in order.
func overlay(files, over []txtar.File) []txtar.File {
	out := append([]txtar.File(nil), files...)
	for _, f := range over {
		replaced := false
		for i := range out {
			if out[i].Name == f.Name {
				out[i], replaced = f, true
			}
		}
		if !replaced {
			out = append(out, f)
		}
	}
	return out
}
