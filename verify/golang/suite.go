package golang

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
)

// RunSuite implements verify.Adapter: `go test -json -vet=off` over targets
// (nil: ./... of every module) in dir. Failed lists failing tests as
// "importpath.TestName" and packages that fail to build or fail outside
// any test by import path.
func (a *Adapter) RunSuite(ctx context.Context, r sandbox.Runner, dir string, targets []string, timeout time.Duration) (verify.SuiteResult, error) {
	start := time.Now()
	if r == nil {
		return verify.SuiteResult{}, errors.New("go adapter: no runner given")
	}
	if timeout < 0 {
		return verify.SuiteResult{}, fmt.Errorf("go adapter: suite timeout %s is negative", timeout)
	}
	l, err := findModules(dir)
	if err != nil {
		return verify.SuiteResult{}, fmt.Errorf("go adapter: finding Go modules in %s: %w", dir, err)
	}
	for _, s := range l.Skipped {
		a.note("go: %s; its tests are not run", s)
	}
	if len(l.Roots) == 0 {
		return verify.SuiteResult{Outcome: verify.Pass, Detail: "no go.mod: no Go tests to run", Duration: time.Since(start)}, nil
	}

	// Patterns per module root, relative to that root.
	perRoot := map[string][]string{}
	var order []string
	add := func(root, pattern string) {
		if _, ok := perRoot[root]; !ok {
			order = append(order, root)
		}
		perRoot[root] = append(perRoot[root], pattern)
	}
	var reported []string
	if targets == nil {
		for _, root := range l.Roots {
			add(root, "./...")
			reported = append(reported, joinPattern(root, "./..."))
		}
	} else {
		for _, t := range targets {
			dirPart, _ := strings.CutSuffix(t, "/...")
			if t == "./..." {
				dirPart = "."
			}
			if err := checkPackage(dirPart); err != nil {
				return verify.SuiteResult{}, fmt.Errorf("go adapter: target %q: %w", t, err)
			}
			root, pattern, ok := inModule(l, t)
			if !ok {
				a.note("go: target %s is in no module of the repository; not run", t)
				continue
			}
			add(root, pattern)
			reported = append(reported, t)
		}
	}

	out := verify.SuiteResult{Outcome: verify.Pass, Targets: reported}
	var details []string
	timedOut, buildBroken, failed := false, false, false
	for _, root := range order {
		cwd, env, flags := a.goCommand(dir, l, root)
		args := append([]string{a.goBin(), "test", "-json", "-vet=off"}, flags...)
		var limit time.Duration
		if timeout > 0 {
			args = append(args, "-timeout", timeout.String())
			limit = timeout + buildAllowance
		}
		args = append(args, perRoot[root]...)
		res, err := r.Run(ctx, sandbox.Command{Dir: cwd, Args: args, Env: env, Timeout: limit})
		if errors.Is(err, sandbox.ErrNotFound) {
			return verify.SuiteResult{Outcome: verify.EnvError, Targets: reported, Detail: fmt.Sprintf("%s not found: %s", a.goBin(), installHint), Duration: time.Since(start)}, nil
		}
		if err != nil {
			return verify.SuiteResult{}, fmt.Errorf("go adapter: go test in %s: %w", root, err)
		}
		stream, err := ParseTestJSON(bytes.NewReader(res.Stdout))
		if err != nil {
			return verify.SuiteResult{}, fmt.Errorf("go adapter: reading go test output in %s: %w", root, err)
		}
		if res.TimedOut {
			timedOut = true
			details = append(details, fmt.Sprintf("go test in %s was stopped after %s", root, limit))
		}
		sawFailure := false
		for _, p := range stream.Packages {
			switch {
			case p.BuildFailed():
				buildBroken, sawFailure = true, true
				out.Failed = append(out.Failed, p.Package)
				details = append(details, excerpt(stream.BuildErrorText(p)))
			case p.TimedOut:
				timedOut, sawFailure = true, true
				out.Failed = append(out.Failed, p.Package)
				details = append(details, p.Package+": "+excerpt(timeoutText(p)))
			case p.Action == "fail":
				sawFailure = true
				failed = true
				n := len(out.Failed)
				for _, t := range p.Tests {
					if t.Action == "fail" || t.Action == "" {
						out.Failed = append(out.Failed, p.Package+"."+t.Name)
						if len(details) < 5 {
							details = append(details, p.Package+"."+t.Name+": "+excerpt(filterOutput(t.Output)))
						}
					}
				}
				if len(out.Failed) == n {
					out.Failed = append(out.Failed, p.Package)
					details = append(details, p.Package+": "+excerpt(filterOutput(p.Output)))
				}
			}
		}
		if res.ExitCode != 0 && !sawFailure && !res.TimedOut {
			text := strings.TrimSpace(strings.Join(append(stream.Plain, string(res.Stderr)), "\n"))
			if text == "" {
				text = fmt.Sprintf("go test exited with status %d", res.ExitCode)
			}
			if isToolchainProblem(text) {
				return verify.SuiteResult{Outcome: verify.EnvError, Targets: reported, Detail: excerpt(text), Duration: time.Since(start)}, nil
			}
			buildBroken = true
			out.Failed = append(out.Failed, joinPattern(root, "./..."))
			details = append(details, excerpt(text))
		}
	}
	switch {
	case timedOut:
		out.Outcome = verify.Timeout
	case buildBroken:
		out.Outcome = verify.BuildError
	case failed:
		out.Outcome = verify.Fail
	}
	out.Detail = excerpt(strings.Join(details, "\n"))
	out.Duration = time.Since(start)
	return out, nil
}

func timeoutText(p *PackageRun) string {
	for _, t := range p.Tests {
		if strings.Contains(t.Output, timeoutMarker) {
			return t.Output
		}
	}
	return p.Output
}

// joinPattern expresses a pattern relative to a module root as one
// relative to the snapshot.
func joinPattern(root, pattern string) string {
	if root == "." {
		return pattern
	}
	return "./" + root + strings.TrimPrefix(pattern, ".")
}
