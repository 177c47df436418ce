package rust

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/bcode-dev/bcode/verify"
)

// FindingShouldPanicLoosened: a test that expected no panic now expects
// one, or one that expected a panic with a given message now accepts any
// panic. It still runs, so it is not test_skipped, but it checks less.
const FindingShouldPanicLoosened = "should_panic_loosened"

// Tamper implements verify.Adapter: tests deleted (test_deleted), newly
// #[ignore]d or put under a cfg that the test build may leave out — a
// #[cfg(any())], a feature, a made-up name — on the fn or a module around
// it, or on the `mod x;` declaring the file it is in (test_skipped),
// #[should_panic] newly added or stripped of its expected message
// (should_panic_loosened), changed build scripts (test_infra_changed: they
// decide what is compiled for the tests), and changed cargo configuration
// or manifest lines that turn tests off (config_changed).
func (a *Adapter) Tamper(ctx context.Context, change *verify.Change) ([]verify.Finding, error) {
	hasLib := libFinder(ctx, change)
	base := map[string]fileTest{}
	head := map[string]fileTest{}
	var out []verify.Finding
	for _, f := range change.Files {
		if inBuildOutput(f.Path) {
			continue
		}
		out = append(out, configFindings(f)...)
		if !a.rustSource(f) {
			continue
		}
		out = append(out, gatedModules(ctx, change, f)...)
		for _, t := range testsOf(f.Path, f.Base, hasLib) {
			base[t.test.ID()] = t
		}
		for _, t := range testsOf(f.Path, f.Head, hasLib) {
			head[t.test.ID()] = t
		}
	}
	ids := make([]string, 0, len(base))
	for id := range base {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		b := base[id]
		h, ok := head[id]
		if !ok {
			out = append(out, verify.Finding{Code: verify.FindingTestDeleted, Path: b.test.File,
				Message: fmt.Sprintf("test %s (base line %d) was deleted from %s", b.test.Name, b.fn.Line, b.test.Package)})
			continue
		}
		if f, ok := weakened(b, h); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// weakened compares a test's two versions: one finding, the first reason.
func weakened(b, h fileTest) (verify.Finding, bool) {
	at := func(code, msg string) (verify.Finding, bool) {
		return verify.Finding{Code: code, Path: h.test.File, Line: h.fn.Line, Message: msg}, true
	}
	name := h.test.Name
	if a, ok := attrNamed(h.fn.Attrs, "ignore"); ok {
		if _, was := attrNamed(b.fn.Attrs, "ignore"); !was {
			return at(verify.FindingTestSkipped, fmt.Sprintf("%s is now ignored: #[%s] was added", name, a))
		}
	}
	if g, ok := newGate(b.fn.Gates, h.fn.Gates); ok {
		return at(verify.FindingTestSkipped, fmt.Sprintf("%s is now under #[%s], which the test build may leave out", name, g))
	}
	hp, hasPanic := attrNamed(h.fn.Attrs, "should_panic")
	bp, hadPanic := attrNamed(b.fn.Attrs, "should_panic")
	switch {
	case hasPanic && !hadPanic:
		return at(FindingShouldPanicLoosened, fmt.Sprintf("%s now passes by panicking: #[%s] was added", name, hp))
	case hasPanic && strings.Contains(bp, "expected") && !strings.Contains(hp, "expected"):
		return at(FindingShouldPanicLoosened, fmt.Sprintf("%s now accepts any panic: #[%s] was #[%s]", name, hp, bp))
	}
	return verify.Finding{}, false
}

// testsOff matches manifest lines that stop cargo from running a target's
// tests, or from running them under libtest.
var testsOff = regexp.MustCompile(`(?m)^\s*(test|harness|doctest)\s*=\s*false`)

// configFindings reports changed build scripts, cargo configuration and
// manifests that newly turn tests off.
func configFindings(f verify.FileChange) []verify.Finding {
	switch {
	case path.Base(f.Path) == "build.rs" && !strings.Contains("/"+f.Path, "/src/") && !strings.Contains("/"+f.Path, "/tests/"):
		return []verify.Finding{{Code: verify.FindingTestInfra, Path: f.Path, Line: firstChanged(f),
			Message: "the build script changed (" + string(f.Status) + "): it runs before every test build and decides what is compiled"}}
	case isCargoConfig(f.Path):
		return []verify.Finding{{Code: verify.FindingConfigChanged, Path: f.Path, Line: firstChanged(f),
			Message: "cargo configuration changed: it sets flags and cfgs for every build below it"}}
	case path.Base(f.Path) == "Cargo.toml" && f.Head != nil:
		if len(testsOff.FindAll(f.Head, -1)) > len(testsOff.FindAll(f.Base, -1)) {
			return []verify.Finding{{Code: verify.FindingConfigChanged, Path: f.Path, Line: firstChanged(f),
				Message: "the manifest newly sets test, harness or doctest = false: cargo test stops running some tests"}}
		}
	}
	return nil
}

func firstChanged(f verify.FileChange) int {
	if len(f.Changed) > 0 {
		return f.Changed[0].Start
	}
	return 0
}

// gatedModules reports `mod x;` declarations the head newly puts under a
// cfg, when the module's file holds tests: they leave the test build
// without a line of theirs changing.
func gatedModules(ctx context.Context, change *verify.Change, f verify.FileChange) []verify.Finding {
	if f.Base == nil || f.Head == nil {
		return nil
	}
	base := map[string][]string{}
	for _, d := range modDecls(f.Base) {
		base[d.Name] = d.Gates
	}
	var out []verify.Finding
	for _, d := range modDecls(f.Head) {
		had, ok := base[d.Name]
		if !ok {
			continue
		}
		gate, ok := newGate(had, d.Gates)
		if !ok {
			continue
		}
		if file, n := moduleTests(ctx, change, f.Path, d.Name); n > 0 {
			out = append(out, verify.Finding{Code: verify.FindingTestSkipped, Path: f.Path, Line: d.Line,
				Message: fmt.Sprintf("module %s (%s, %d tests) is now under #[%s], which the test build may leave out", d.Name, file, n, gate)})
		}
	}
	return out
}

// newGate returns a gate of head that base lacks.
func newGate(base, head []string) (string, bool) {
	for _, g := range head {
		if !slices.Contains(base, g) {
			return g, true
		}
	}
	return "", false
}

// moduleTests finds the file of module name declared in the file at
// declaredIn (on the head, else the base) and counts its tests.
func moduleTests(ctx context.Context, change *verify.Change, declaredIn, name string) (string, int) {
	dir := path.Dir(declaredIn)
	switch path.Base(declaredIn) {
	case "lib.rs", "main.rs", "mod.rs":
	default:
		dir = path.Join(dir, strings.TrimSuffix(path.Base(declaredIn), ".rs"))
	}
	rel := strings.ReplaceAll(name, "::", "/")
	for _, p := range []string{path.Join(dir, rel+".rs"), path.Join(dir, rel, "mod.rs")} {
		var src []byte
		if f, ok := change.File(p); ok {
			src = f.Head
		} else if change.Workspace != nil {
			src, _ = change.Workspace.ReadBase(ctx, p)
		}
		if src != nil {
			return p, len(testFns(src))
		}
	}
	return "", 0
}
