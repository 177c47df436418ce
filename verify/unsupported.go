package verify

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// sourceLanguages are the languages bcode knows by their source files'
// extensions, whether or not it has an adapter for them. A changed file
// no adapter owns whose extension is here is code (or a test) the gate
// cannot judge: its tests are never run, so no verdict may stand for it.
// Docs, data and configuration (.md, .json, .yaml, .toml, images) are not
// here; nor are shell scripts, which are build glue more often than code
// under test.
var sourceLanguages = map[string]string{
	".go": "Go", ".py": "Python", ".pyi": "Python",
	".js": "JavaScript", ".jsx": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript",
	".vue": "JavaScript", ".svelte": "JavaScript",
	".ts": "TypeScript", ".tsx": "TypeScript", ".mts": "TypeScript", ".cts": "TypeScript",
	".rs": "Rust", ".java": "Java", ".kt": "Kotlin", ".kts": "Kotlin", ".scala": "Scala",
	".groovy": "Groovy", ".clj": "Clojure", ".rb": "Ruby", ".php": "PHP", ".pl": "Perl", ".pm": "Perl",
	".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".cxx": "C++", ".hh": "C++", ".hpp": "C++", ".hxx": "C++",
	".m": "Objective-C", ".mm": "Objective-C", ".cs": "C#", ".fs": "F#", ".vb": "VB.NET",
	".swift": "Swift", ".dart": "Dart", ".lua": "Lua", ".r": "R", ".jl": "Julia", ".zig": "Zig",
	".ex": "Elixir", ".exs": "Elixir", ".erl": "Erlang", ".hs": "Haskell", ".ml": "OCaml", ".nim": "Nim",
}

// dataDirs are directories whose files are data for tests, whatever
// their extension: a JavaScript file under testdata/ is a Go test's input.
var dataDirs = map[string]bool{"testdata": true, "fixtures": true}

// unsupportedLanguage is the language of p when p is code the gate cannot
// judge: no adapter owns it, its extension is a known language's, and it
// is not test data.
func (g *Gate) unsupportedLanguage(p string) (string, bool) {
	for _, a := range g.Adapters {
		if a.Owns(p) {
			return "", false
		}
	}
	lang, ok := sourceLanguages[strings.ToLower(path.Ext(p))]
	if !ok {
		return "", false
	}
	for _, el := range strings.Split(path.Dir(p), "/") {
		if dataDirs[el] {
			return "", false
		}
	}
	return lang, true
}

// unsupported lists the change's files the gate cannot judge, one
// finding each, sorted by path.
func (g *Gate) unsupported(change *Change) []Finding {
	var out []Finding
	for _, f := range change.Files {
		if isSubmodule(f) {
			continue
		}
		lang, ok := g.unsupportedLanguage(f.Path)
		if !ok {
			continue
		}
		what := "code"
		if looksLikeTest(f.Path) {
			what = "test"
		}
		out = append(out, Finding{
			Code:    FindingUnsupported,
			Path:    f.Path,
			Message: fmt.Sprintf("%s %s (%s): bcode has no %s adapter, so no test of it ran", lang, what, f.Status, lang),
		})
	}
	sortFindings(out)
	return out
}

// looksLikeTest is whether p is named like a test in the usual
// conventions (foo.test.js, foo_spec.rb, FooTest.java, tests/...); it only
// words the finding, it decides nothing.
func looksLikeTest(p string) bool {
	b := strings.ToLower(path.Base(p))
	stem := strings.TrimSuffix(b, path.Ext(b))
	for _, s := range []string{".test", ".spec", "_test", "_spec", "test"} {
		if strings.HasSuffix(stem, s) {
			return true
		}
	}
	if strings.HasPrefix(stem, "test_") {
		return true
	}
	for _, el := range strings.Split(path.Dir(p), "/") {
		if el == "test" || el == "tests" || el == "__tests__" || el == "spec" {
			return true
		}
	}
	return false
}

// judgesAny reports whether some adapter has a part of the change to
// judge: a file it owns, or test data its tests read.
func (g *Gate) judgesAny(change *Change) bool {
	for _, f := range change.Files {
		for _, a := range g.Adapters {
			if a.Owns(f.Path) {
				return true
			}
		}
		for _, el := range strings.Split(path.Dir(f.Path), "/") {
			if dataDirs[el] {
				return true
			}
		}
	}
	return false
}

// unsupportedMessage is the reason of a change the gate cannot judge at
// all: the languages and their files.
func (g *Gate) unsupportedMessage(fs []Finding) string {
	byLang := map[string][]string{}
	for _, f := range fs {
		lang, _ := g.unsupportedLanguage(f.Path)
		byLang[lang] = append(byLang[lang], f.Path)
	}
	langs := make([]string, 0, len(byLang))
	for l := range byLang {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	parts := make([]string, len(langs))
	for i, l := range langs {
		parts[i] = fmt.Sprintf("%s (%s)", l, strings.Join(byLang[l], ", "))
	}
	return "bcode cannot judge this change: it has no adapter for " + strings.Join(parts, "; ") + ", so none of its tests ran"
}
