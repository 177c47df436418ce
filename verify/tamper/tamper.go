// Package tamper reports the tampering on a change that no language adapter
// owns: changes under protected paths, to bcode's own configuration, to CI
// definitions, to Makefile test targets, test sources that became binary,
// and what landing a tree would put in a checkout for git or the kernel to
// act on (Landing, CheckLanding).
//
// Every rule reads the configuration the caller loaded from the BASE commit,
// so a change cannot loosen the rules it is judged by.
package tamper

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify"
)

// Check reports the tamper findings of change that no language adapter owns.
// cfg comes from the BASE commit (config.Parse of
// Workspace.ReadBase(".bcode/config.toml"); the caller loads it).
//
// Changes are listed without rename detection, so a renamed file appears as
// a deletion and an addition and both sides are judged.
func Check(change *verify.Change, cfg config.Config) []verify.Finding {
	if change == nil {
		return nil
	}
	var out []verify.Finding
	for _, f := range change.Files {
		out = append(out, protectedPath(f, cfg)...)
		out = append(out, ciChanged(f)...)
		out = append(out, makefileTargets(change, f)...)
		out = append(out, binaryTestFile(f)...)
	}
	slices.SortFunc(out, func(a, b verify.Finding) int {
		return cmp.Or(
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.CompactFunc(out, func(a, b verify.Finding) bool { return a == b })
}

// protectedPath reports a change under a glob of the base's gate.protected,
// and any change to the configuration file itself. The configuration is
// reported whether or not the base protects it: the gate never reads it from
// the head, so a change to it would silently not apply, and a reviewer must
// see that.
func protectedPath(f verify.FileChange, cfg config.Config) []verify.Finding {
	if f.Path == config.Path {
		return []verify.Finding{{
			Code: verify.FindingConfigChanged,
			Path: f.Path,
			Message: fmt.Sprintf("bcode's configuration %s (%s); the base commit's configuration stays in force for this check",
				f.Status, config.Path),
		}}
	}
	glob, ok := cfg.IsProtected(f.Path)
	if !ok {
		return nil
	}
	return []verify.Finding{{
		Code:    verify.FindingProtectedPath,
		Path:    f.Path,
		Message: fmt.Sprintf("protected path %s: matches %q in the base's gate.protected", f.Status, glob),
	}}
}

// ciGlobs are the places CI systems read their definitions from. A pattern
// without a slash matches the base name in any directory (as in
// config.MatchGlob), which errs on the side of reporting.
var ciGlobs = []string{
	".github/workflows/**",
	".github/actions/**",
	".gitlab-ci.yml",
	".gitlab-ci.yaml",
	".circleci/**",
	"Jenkinsfile",
	"azure-pipelines.yml",
	"azure-pipelines.yaml",
	".travis.yml",
	".buildkite/**",
	"bitbucket-pipelines.yml",
	".drone.yml",
	".woodpecker/**",
	".woodpecker.yml",
	".woodpecker.yaml",
	".ci/**",
}

// ciChanged reports a change to a CI definition: CI is where the suite runs
// for everyone else, so changing it can hide a failure the gate never sees.
func ciChanged(f verify.FileChange) []verify.Finding {
	for _, g := range ciGlobs {
		if config.MatchGlob(g, f.Path) {
			return []verify.Finding{{
				Code:    verify.FindingCIChanged,
				Path:    f.Path,
				Message: fmt.Sprintf("CI definition %s (matches %q)", f.Status, g),
			}}
		}
	}
	return nil
}

// binaryTestFile reports a test source whose head side is not text: the
// adapters find changed tests by parsing source, and a binary file would
// hide what it does from them.
func binaryTestFile(f verify.FileChange) []verify.Finding {
	if f.Head == nil || !isTestSource(f.Path) || !isBinary(f.Head) {
		return nil
	}
	return []verify.Finding{{
		Code:    verify.FindingBinaryTestFile,
		Path:    f.Path,
		Message: "test source file is binary on head; its tests cannot be read or judged",
	}}
}

// isTestSource matches the test file names of the languages bcode supports
// (Go's *_test.go, pytest's default test_*.py and *_test.py, conftest.py).
// Other files under test directories may be binary fixtures.
func isTestSource(p string) bool {
	if hasDir(p, "testdata") {
		return false
	}
	base := path.Base(p)
	switch {
	case strings.HasSuffix(base, "_test.go"):
		return true
	case strings.HasSuffix(base, ".py"):
		return strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py"
	}
	return false
}

func hasDir(p, dir string) bool {
	return slices.Contains(strings.Split(path.Dir(p), "/"), dir)
}

// isBinary uses git's own heuristic: a NUL byte in the first 8000 bytes.
// It is computed here rather than taken from FileChange.Binary, which is set
// when either side is binary; only the head side matters.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// CheckLanding is the gate's landing check: Landing over the change's
// base and head trees (the workspace hands them out as verify.Trees), so
// the gate and accept judge what lands by one implementation. An existing
// submodule moved to another commit is allowed by the base's
// gate.allow_submodule_updates. A change whose workspace has no trees
// (a test's fake) has no landing findings.
func CheckLanding(ctx context.Context, change *verify.Change, cfg config.Config) ([]verify.Finding, error) {
	if change == nil {
		return nil, nil
	}
	src, ok := change.Workspace.(verify.TreeSource)
	if !ok {
		return nil, nil
	}
	fs, err := Landing(ctx, src.Tree(verify.BaseSide), src.Tree(verify.HeadSide))
	if err != nil {
		return nil, err
	}
	var out []verify.Finding
	for _, f := range fs {
		if cfg.Gate.AllowSubmoduleUpdates && submoduleMove(change, f) {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// submoduleMove reports whether finding f is only an existing submodule
// moved to another commit: a gitlink on both sides of the same path.
func submoduleMove(change *verify.Change, f verify.Finding) bool {
	if f.Code != FindingNestedRepo {
		return false
	}
	for _, fc := range change.Files {
		if fc.Path == f.Path {
			return fc.Status == verify.Modified && fc.BaseMode == "160000" && fc.HeadMode == "160000"
		}
	}
	return false
}
