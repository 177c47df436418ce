package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/server"
	lscmd "github.com/bcode-dev/bcode/server/command"
	"github.com/bcode-dev/bcode/server/lsp"
	"github.com/bcode-dev/bcode/verify/mutate"
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
	fs := flag.NewFlagSet("bcode ci", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repoDir := fs.String("repo", ".", "the git checkout to check")
	base := fs.String("base", "", "base revision (default: merge-base with the upstream or main branch)")
	github := fs.Bool("github", false, "print GitHub Actions workflow annotations")
	sarif := fs.String("sarif", "", "write SARIF 2.1.0 to FILE")
	mutationReportFile := fs.String("mutation-report", "", "also write the mutation-testing-report JSON (Stryker's viewer) to FILE")
	serverPath := fs.String("server", "", "the bcode-ls binary (default: next to bcode, else on PATH)")
	var timeout time.Duration
	durationFlag(fs, &timeout, "timeout", 30*time.Minute, time.Second, maxTimeout, "give up after this long")
	quiet := fs.Bool("q", false, "do not print progress")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bcode ci [--base REV] [--github | --sarif FILE] [--repo DIR] [--server PATH]")
		fmt.Fprintln(stderr, "\nExit status: 0 no mutant survives, 1 some survive, 2 error.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return ciError
	}
	fail := func(format string, a ...any) int {
		errorf(stderr, "bcode ci", format, a...)
		return ciError
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if *github && *sarif != "" {
		return fail("--github and --sarif are exclusive: pick one")
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
		return fail("%v%s", err, cl.logTail())
	}
	mrep := mutationReport(root, rep)
	switch {
	case *github:
		err = mutate.WriteGitHub(stdout, mrep)
		if err == nil {
			err = appendStepSummary(mrep)
		}
	case *sarif != "":
		err = writeFileWith(*sarif, mrep, mutate.WriteSARIF)
	default:
		err = mutate.WriteText(stdout, mrep)
	}
	if err != nil {
		return fail("writing the report: %v", err)
	}
	if *mutationReportFile != "" {
		if err := writeFileWith(*mutationReportFile, mrep, mutate.WriteMutationReport); err != nil {
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
func mutationReport(root string, rep server.EvidenceReport) *mutate.Report {
	mr := &mutate.Report{Mutants: rep.Mutants, Errors: rep.Errors, Notes: rep.Notes,
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

// writeFileWith renders rep into the file at path.
func writeFileWith(path string, rep *mutate.Report, write func(io.Writer, *mutate.Report) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// appendStepSummary adds the full list of mutants to the GitHub step
// summary when the job has one: annotations stop at ten of a kind.
func appendStepSummary(rep *mutate.Report) error {
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if err := mutate.WriteGitHubSummary(f, rep); err != nil {
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
	return "", fmt.Errorf("bcode-ls not found next to bcode (%s) or on PATH: install it with `go install github.com/bcode-dev/bcode/cmd/bcode-ls@latest`, or build it beside bcode with `go build -o %s ./cmd/bcode-ls`, or pass --server PATH", beside, beside)
}

// ciClient is the LSP client end of the child server.
type ciClient struct {
	cmd  *exec.Cmd
	conn *lsp.ClientConn
	log  *tailBuffer

	progress io.Writer // nil: quiet
}

type pipeRWC struct {
	io.Reader
	io.WriteCloser
}

func startServer(ctx context.Context, path string, stderr io.Writer, quiet bool) (*ciClient, error) {
	cmd := exec.Command(path, "--stdio", "--no-evidence-on-save", "--no-watch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &ciClient{cmd: cmd, log: &tailBuffer{max: 8 << 10}}
	cmd.Stderr = c.log
	if !quiet {
		c.progress = stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %v", path, err)
	}
	c.conn = lsp.NewClientConn(ctx, pipeRWC{Reader: out, WriteCloser: in}, c)
	return c, nil
}

// evidence initializes the server on root, runs evidence and waits for it.
func (c *ciClient) evidence(ctx context.Context, root, base string) (server.EvidenceReport, error) {
	var rep server.EvidenceReport
	init := map[string]any{
		"processId":  os.Getpid(),
		"rootUri":    lsp.FileURI(root),
		"clientInfo": map[string]any{"name": "bcode ci"},
		"capabilities": map[string]any{
			"window": map[string]any{"workDoneProgress": true},
		},
	}
	if err := c.conn.Call(ctx, "initialize", init, nil); err != nil {
		return rep, fmt.Errorf("initialize: %w", err)
	}
	if err := c.conn.Notify(ctx, "initialized", map[string]any{}); err != nil {
		return rep, err
	}
	var run lscmd.EvidenceRunResult
	if err := c.conn.Call(ctx, "workspace/executeCommand", map[string]any{
		"command": lscmd.EvidenceRun, "arguments": []any{lscmd.EvidenceRunArgs{Base: base}},
	}, &run); err != nil {
		return rep, err
	}
	if err := c.conn.Call(ctx, server.MethodEvidence, map[string]any{"wait": true}, &rep); err != nil {
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
func (c *ciClient) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = c.conn.Call(ctx, "shutdown", nil, nil)
	_ = c.conn.Notify(ctx, "exit", nil)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.conn.Close()
}

func (c *ciClient) logTail() string {
	t := strings.TrimSpace(c.log.String())
	if t == "" {
		return ""
	}
	return "\nbcode-ls said:\n" + t
}

// Notification implements lsp.ClientHandler.
func (c *ciClient) Notification(method string, params json.RawMessage) {
	switch method {
	case "$/progress":
		var p struct {
			Value lsp.ProgressValue `json:"value"`
		}
		if c.progress != nil && json.Unmarshal(params, &p) == nil && p.Value.Message != "" {
			fmt.Fprintf(c.progress, "bcode ci: %s\n", shown.Line(p.Value.Message))
		}
	case "window/showMessage":
		var p struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(params, &p) == nil && c.progress != nil {
			fmt.Fprintf(c.progress, "bcode ci: bcode-ls: %s\n", shown.Line(p.Message))
		}
	}
}

// Request implements lsp.ClientHandler.
func (c *ciClient) Request(method string, params json.RawMessage) (any, error) {
	switch method {
	case "window/workDoneProgress/create":
		return nil, nil
	case "window/showDocument":
		return map[string]any{"success": false}, nil
	}
	return nil, lsp.Errorf(lsp.CodeMethodNotFound, "bcode ci does not handle %s", method)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// finding is one diagnostic in the repository's terms: 1-based lines, and
// columns both in UTF-16 units (SARIF's default) and in characters
// (GitHub's annotations).
