package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/server"
	lscmd "github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
)

func init() {
	register(command{
		name:    "ci",
		summary: "run evidence through bcode-ls, as editors do, and report for CI",
		run:     cmdCI,
	})
}

// Exit codes of `bcode ci`, as `bcode evidence`'s.
const (
	ciClean     = 0
	ciSurvivors = 1
	ciError     = 2
)

// cmdCI starts `bcode-ls --stdio` as a child process, talks LSP to it the
// way an editor does, runs evidence on the branch's change and prints the
// diagnostics it published: CI uses the very server editors use.
func cmdCI(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode ci [--base REV] [--github | --sarif FILE] [--mutation-report FILE] [--repo DIR] [--server PATH] [-q]", stdout, stderr)
	fs.about = "Exit status: 0 no mutant survives, 1 some survive, 2 error."
	repoDir := fs.String("repo", ".", "the git checkout `DIR` to check")
	base := fs.String("base", "", "the base revision `REV` (default: merge-base with the upstream or main branch)")
	github := fs.Bool("github", false, "print GitHub Actions workflow annotations")
	sarif := fs.String("sarif", "", "write SARIF 2.1.0 to `FILE`")
	mutationReportFile := fs.String("mutation-report", "", "also write the mutation-testing-report JSON (Stryker's viewer) to `FILE`")
	serverPath := fs.String("server", "", "the bcode-ls binary at `PATH` (default: next to bcode, else on PATH)")
	var timeout time.Duration
	durationFlag(fs, &timeout, "timeout", 30*time.Minute, time.Second, maxTimeout, "give up after this long")
	quiet := fs.Bool("q", false, "do not print progress")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		errorf(stderr, "bcode ci", format, a...)
		return ciError
	}
	if *github && *sarif != "" {
		return fs.usageErr("--github and --sarif are exclusive: pick one")
	}
	root, err := filepath.Abs(*repoDir)
	if err != nil {
		return fail("%v", err)
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	ls, err := findServer(*serverPath)
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cl, err := startServer(ctx, ls, stderr, *quiet)
	if err != nil {
		return fail("%v", err)
	}
	defer cl.stop()
	rep, err := cl.evidence(ctx, root, *base)
	if err != nil {
		return fail("%v%s", err, cl.LogTail())
	}
	mrep := mutationReport(root, rep)
	switch {
	case *github:
		err = app.WriteEvidence(stdout, app.EvidenceGitHub, mrep)
		if err == nil {
			err = appendStepSummary(mrep)
		}
	case *sarif != "":
		err = writeFileWith(*sarif, mrep, app.EvidenceSARIF)
	default:
		err = app.WriteEvidence(stdout, app.EvidenceText, mrep)
	}
	if err != nil {
		return fail("writing the report: %v", err)
	}
	if *mutationReportFile != "" {
		if err := writeFileWith(*mutationReportFile, mrep, app.EvidenceMutationReport); err != nil {
			return fail("writing %s: %v", *mutationReportFile, err)
		}
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(stderr, "bcode ci: %s\n", shown.Line(e))
	}
	survivors := len(mrep.Survivors())
	if !*quiet {
		fmt.Fprintf(stderr, "bcode ci: %d mutants, %d survive (%s..%s)\n", len(rep.Mutants), survivors, shortID(rep.Base), shortID(rep.Head))
	}
	if survivors > 0 {
		return ciSurvivors
	}
	if len(rep.Errors) > 0 {
		return ciError
	}
	return ciClean
}

// mutationReport is the server's evidence as the one report every
// renderer takes, so `bcode ci` and `bcode evidence` print the same
// results and fingerprints. The sources come from the checkout (the head
// bcode-ls judged), capped.
func mutationReport(root string, rep server.EvidenceReport) *app.EvidenceReport {
	mr := &app.EvidenceReport{Mutants: rep.Mutants, Errors: rep.Errors, Notes: rep.Notes,
		Sources: map[string]string{}, TestFiles: rep.TestFiles}
	if rep.Stats != nil {
		mr.Stats = *rep.Stats
	}
	read := func(rel string) {
		if _, ok := mr.Sources[rel]; ok {
			return
		}
		if b, err := readSource(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			mr.Sources[rel] = string(b)
		}
	}
	for _, m := range rep.Mutants {
		read(m.File)
	}
	for _, f := range rep.TestFiles {
		read(f)
	}
	return mr
}

// maxSourceBytes caps what a report embeds of one file.
const maxSourceBytes = 4 << 20

func readSource(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSourceBytes {
		return nil, fmt.Errorf("%s: not a regular file under %d bytes", name, maxSourceBytes)
	}
	return io.ReadAll(io.LimitReader(f, maxSourceBytes))
}

// writeFileWith renders rep in format into the file at path.
func writeFileWith(path string, rep *app.EvidenceReport, format app.EvidenceFormat) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := app.WriteEvidence(f, format, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// appendStepSummary adds the full list of mutants to the GitHub step
// summary when the job has one: annotations stop at ten of a kind.
func appendStepSummary(rep *app.EvidenceReport) error {
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if err := app.WriteEvidence(f, app.EvidenceGitHubSummary, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// findServer locates bcode-ls: the flag, then beside this binary, then PATH.
func findServer(flagPath string) (string, error) {
	if flagPath != "" {
		if _, err := os.Stat(flagPath); err != nil {
			return "", fmt.Errorf("--server %s: %v", flagPath, err)
		}
		return flagPath, nil
	}
	var beside string
	if exe, err := os.Executable(); err == nil {
		beside = filepath.Join(filepath.Dir(exe), "bcode-ls")
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("bcode-ls"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("bcode-ls not found next to bcode (%s) or on PATH: install it with bcode, from bcode's checkout: 'go install ./cmd/...'; or build it beside bcode with 'go build -o %s ./cmd/bcode-ls'; or pass --server PATH", beside, beside)
}

// ciClient is the LSP client end of the child server.
type ciClient struct {
	*lsp.Child
}

// startServer starts bcode-ls with evidence on demand only; unless quiet,
// its progress and messages go to stderr as they come.
func startServer(ctx context.Context, path string, stderr io.Writer, quiet bool) (*ciClient, error) {
	opts := lsp.ChildOptions{
		Args:           []string{"--stdio", "--no-evidence-on-save", "--no-watch"},
		SessionOptions: lsp.SessionOptions{Answer: ciAnswer},
	}
	if !quiet {
		opts.Watch = func(method string, params json.RawMessage) { printProgress(stderr, method, params) }
	}
	child, err := lsp.StartChild(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return &ciClient{Child: child}, nil
}

// evidence initializes the server on root, runs evidence and waits for it.
func (c *ciClient) evidence(ctx context.Context, root, base string) (server.EvidenceReport, error) {
	var rep server.EvidenceReport
	if _, err := c.Initialize(ctx, lsp.ToolInitialize(root, "bcode ci")); err != nil {
		return rep, fmt.Errorf("initialize: %w", err)
	}
	var run lscmd.EvidenceRunResult
	if err := c.Conn.Call(ctx, "workspace/executeCommand", map[string]any{
		"command": lscmd.EvidenceRun, "arguments": []any{lscmd.EvidenceRunArgs{Base: base}},
	}, &run); err != nil {
		return rep, err
	}
	if err := c.Conn.Call(ctx, server.MethodEvidence, map[string]any{"wait": true}, &rep); err != nil {
		return rep, err
	}
	if rep.Run != run.Run {
		return rep, fmt.Errorf("bcode-ls reported run %d, not the run %d it started", rep.Run, run.Run)
	}
	if rep.State != "done" {
		return rep, fmt.Errorf("evidence %s: %s", rep.State, rep.Error)
	}
	return rep, nil
}

// stop shuts the server down politely, then for certain.
func (c *ciClient) stop() { c.Stop(15 * time.Second) }

// printProgress prints what bcode-ls reports while it works.
func printProgress(w io.Writer, method string, params json.RawMessage) {
	switch method {
	case "$/progress":
		var p struct {
			Value lsp.ProgressValue `json:"value"`
		}
		if json.Unmarshal(params, &p) == nil && p.Value.Message != "" {
			fmt.Fprintf(w, "bcode ci: %s\n", shown.Line(p.Value.Message))
		}
	case "window/showMessage":
		var p struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(params, &p) == nil {
			fmt.Fprintf(w, "bcode ci: bcode-ls: %s\n", shown.Line(p.Message))
		}
	}
}

// ciAnswer answers the server's requests: CI shows no documents.
func ciAnswer(method string, _ json.RawMessage) (any, error) {
	if method == "window/showDocument" {
		return map[string]any{"success": false}, nil
	}
	return nil, lsp.Errorf(lsp.CodeMethodNotFound, "bcode ci does not handle %s", method)
}

// finding is one diagnostic in the repository's terms: 1-based lines, and
// columns both in UTF-16 units (SARIF's default) and in characters
// (GitHub's annotations).
