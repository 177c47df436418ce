package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

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
func cmdCI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode ci", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repoDir := fs.String("repo", ".", "the git checkout to check")
	base := fs.String("base", "", "base revision (default: merge-base with the upstream or main branch)")
	github := fs.Bool("github", false, "print GitHub Actions workflow annotations")
	sarif := fs.String("sarif", "", "write SARIF 2.1.0 to FILE")
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
		fmt.Fprintf(stderr, "bcode ci: "+format+"\n", a...)
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
	rep, diags, err := cl.evidence(ctx, root, *base)
	if err != nil {
		return fail("%v%s", err, cl.logTail())
	}
	findings := collect(root, diags)
	switch {
	case *github:
		writeGitHub(stdout, findings)
	case *sarif != "":
		if err := writeSARIFFile(*sarif, findings); err != nil {
			return fail("writing %s: %v", *sarif, err)
		}
	default:
		for _, f := range findings {
			fmt.Fprintf(stdout, "%s:%d:%d: %s: %s [%s]\n", f.File, f.Line, f.Col, f.level(), f.Message, f.Operator)
		}
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(stderr, "bcode ci: %s\n", e)
	}
	survivors := 0
	for _, f := range findings {
		if f.Severity == lsp.SeverityWarning {
			survivors++
		}
	}
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

	mu       sync.Mutex
	diags    map[string][]lsp.Diagnostic
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
	c := &ciClient{cmd: cmd, log: &tailBuffer{max: 8 << 10}, diags: map[string][]lsp.Diagnostic{}}
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
func (c *ciClient) evidence(ctx context.Context, root, base string) (server.EvidenceReport, map[string][]lsp.Diagnostic, error) {
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
		return rep, nil, fmt.Errorf("initialize: %w", err)
	}
	if err := c.conn.Notify(ctx, "initialized", map[string]any{}); err != nil {
		return rep, nil, err
	}
	var run lscmd.EvidenceRunResult
	if err := c.conn.Call(ctx, "workspace/executeCommand", map[string]any{
		"command": lscmd.EvidenceRun, "arguments": []any{lscmd.EvidenceRunArgs{Base: base}},
	}, &run); err != nil {
		return rep, nil, err
	}
	if err := c.conn.Call(ctx, server.MethodEvidence, map[string]any{"wait": true}, &rep); err != nil {
		return rep, nil, err
	}
	if rep.Run != run.Run {
		return rep, nil, fmt.Errorf("bcode-ls reported run %d, not the run %d it started", rep.Run, run.Run)
	}
	if rep.State != "done" {
		return rep, nil, fmt.Errorf("evidence %s: %s", rep.State, rep.Error)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	diags := make(map[string][]lsp.Diagnostic, len(c.diags))
	for u, ds := range c.diags {
		diags[u] = ds
	}
	return rep, diags, nil
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
	case "textDocument/publishDiagnostics":
		var p struct {
			URI         string           `json:"uri"`
			Diagnostics []lsp.Diagnostic `json:"diagnostics"`
		}
		if json.Unmarshal(params, &p) == nil {
			c.mu.Lock()
			c.diags[p.URI] = p.Diagnostics
			c.mu.Unlock()
		}
	case "$/progress":
		var p struct {
			Value lsp.ProgressValue `json:"value"`
		}
		if c.progress != nil && json.Unmarshal(params, &p) == nil && p.Value.Message != "" {
			fmt.Fprintf(c.progress, "bcode ci: %s\n", p.Value.Message)
		}
	case "window/showMessage":
		var p struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(params, &p) == nil && c.progress != nil {
			fmt.Fprintf(c.progress, "bcode ci: bcode-ls: %s\n", p.Message)
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
type finding struct {
	File                   string
	Line, EndLine          int
	Col, EndCol            int // characters (code points), 1-based
	Col16, EndCol16        int // UTF-16 units, 1-based
	Severity               lsp.Severity
	Operator, Message, Key string
}

func (f finding) level() string {
	if f.Severity == lsp.SeverityWarning {
		return "warning"
	}
	return "note"
}

func collect(root string, diags map[string][]lsp.Diagnostic) []finding {
	var out []finding
	for u, ds := range diags {
		p, err := lsp.URIPath(u)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			continue
		}
		text, _ := os.ReadFile(p)
		for _, d := range ds {
			if d.Source != server.Source {
				continue
			}
			var id string
			_ = json.Unmarshal(d.Data, &id)
			out = append(out, finding{
				File: filepath.ToSlash(rel), Line: int(d.Range.Start.Line) + 1, EndLine: int(d.Range.End.Line) + 1,
				Col: charCol(text, d.Range.Start), EndCol: charCol(text, d.Range.End),
				Col16: int(d.Range.Start.Character) + 1, EndCol16: int(d.Range.End.Character) + 1,
				Severity: d.Severity, Operator: d.Code, Message: d.Message, Key: id,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return out
}

// charCol turns an LSP position (UTF-16) into a 1-based code-point column.
func charCol(text []byte, p lsp.Position) int {
	lines := bytes.Split(text, []byte("\n"))
	if int(p.Line) >= len(lines) {
		return int(p.Character) + 1
	}
	units := utf16.Encode([]rune(string(lines[p.Line])))
	if int(p.Character) > len(units) {
		return int(p.Character) + 1
	}
	return len(utf16.Decode(units[:p.Character])) + 1
}

func writeGitHub(w io.Writer, fs []finding) {
	esc := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	prop := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
	for _, f := range fs {
		kind := "notice"
		if f.Severity == lsp.SeverityWarning {
			kind = "warning"
		}
		fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d,endLine=%d,endColumn=%d,title=%s::%s\n", kind,
			prop.Replace(f.File), f.Line, f.Col, f.EndLine, f.EndCol, prop.Replace("bcode: "+f.Operator), esc.Replace(f.Message))
	}
}

func writeSARIFFile(path string, fs []finding) error {
	type region struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn"`
		EndLine     int `json:"endLine"`
		EndColumn   int `json:"endColumn"`
	}
	type result struct {
		RuleID              string            `json:"ruleId"`
		Level               string            `json:"level"`
		Message             map[string]string `json:"message"`
		Locations           []any             `json:"locations"`
		PartialFingerprints map[string]string `json:"partialFingerprints,omitempty"`
	}
	rules := map[string]bool{}
	results := []result{}
	for _, f := range fs {
		rules[f.Operator] = true
		r := result{RuleID: f.Operator, Level: f.level(), Message: map[string]string{"text": f.Message},
			Locations: []any{map[string]any{"physicalLocation": map[string]any{
				"artifactLocation": map[string]any{"uri": f.File, "uriBaseId": "%SRCROOT%"},
				"region":           region{f.Line, f.Col16, f.EndLine, f.EndCol16},
			}}}}
		if f.Key != "" {
			r.PartialFingerprints = map[string]string{"bcodeMutant/v1": f.Key}
		}
		results = append(results, r)
	}
	ruleList := []any{}
	names := make([]string, 0, len(rules))
	for n := range rules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ruleList = append(ruleList, map[string]any{"id": n, "shortDescription": map[string]string{"text": "mutation operator " + n}})
	}
	doc := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			// SARIF columns count UTF-16 units unless said otherwise: the
			// same as LSP, so the server's ranges carry over unchanged.
			"columnKind": "utf16CodeUnits",
			"tool":       map[string]any{"driver": map[string]any{"name": "bcode", "informationUri": "https://github.com/bcode-dev/bcode", "rules": ruleList}},
			"results":    results,
		}},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return nil
}
