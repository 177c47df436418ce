package secrets

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// historyArgs runs `git log -p` over every ref, hardened against the
// repository it reads: its configuration and attributes could otherwise run
// programs (hooks, fsmonitor, external diff, textconv, gpg for signatures),
// or hide content from the diff (diff.relative, a `-diff` attribute that
// makes a file "binary", diff.noprefix changing the paths we parse).
var historyArgs = []string{
	"--no-pager",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.quotePath=true",
	"-c", "log.showSignature=false",
	"-c", "diff.relative=false",
	"-c", "diff.noprefix=false",
	"-c", "diff.mnemonicPrefix=false",
	"log", "-p", "-U0", "--all",
	"--no-renames", "--no-ext-diff", "--no-textconv", "--text", "--no-color",
	"--no-relative", "--no-show-signature", "--submodule=short",
	"--src-prefix=a/", "--dst-prefix=b/",
	"--diff-filter=d", // deleted files add no lines
	"--format=%x00%H",
}

// historyEnv is git's whole environment: none of the caller's GIT_*
// variables (GIT_DIR, GIT_CONFIG_PARAMETERS) and no system or global
// configuration.
func historyEnv(repoDir string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		// Never search above repoDir for a repository: a directory that is
		// not one must be an error, not a scan of whatever encloses it.
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(repoDir),
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	}
}

// ScanGitHistory reports the secrets in the lines every commit reachable
// from any ref of the repository at repoDir added. Rules come from s alone:
// a .gitleaks.toml, .gitleaksignore or baseline in the repository is never
// read. Merge commits are not diffed (their parents' commits are), so a
// secret written only while resolving a conflict is not seen. Findings are
// in git log order (newest commit first), then by path and line.
func ScanGitHistory(ctx context.Context, repoDir string, s *Scanner) ([]Finding, error) {
	if s == nil {
		return nil, errors.New("secrets: ScanGitHistory needs a Scanner")
	}
	abs, err := filepath.Abs(repoDir)
	if err != nil {
		return nil, fmt.Errorf("secrets: repository %q: %w", repoDir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("secrets: repository %q is not a directory", repoDir)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("secrets: git not found on PATH: install git to scan history")
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", historyArgs...)
	cmd.Dir = abs
	cmd.Env = historyEnv(abs)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 64 << 10}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("secrets: git log: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("secrets: starting git log: %w", err)
	}

	type result struct {
		seq      int
		findings []Finding
	}
	var (
		jobs    = make(chan addedBlock, 64)
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for b := range jobs {
				clean, _ := StripInvisible(b.text)
				if fs := s.findings(b.path, clean, b.firstLine-1, b.commit); len(fs) > 0 {
					mu.Lock()
					results = append(results, result{b.seq, fs})
					mu.Unlock()
				}
			}
		})
	}
	parseErr := parseLogPatch(stdout, func(b addedBlock) {
		select {
		case jobs <- b:
		case <-ctx.Done():
		}
	})
	close(jobs)
	wg.Wait()
	if parseErr != nil {
		cancel()
	}
	waitErr := cmd.Wait()
	if err := ctx.Err(); err != nil && parseErr == nil {
		return nil, fmt.Errorf("secrets: scanning history: %w", err)
	}
	if parseErr != nil {
		return nil, fmt.Errorf("secrets: reading git log: %w", parseErr)
	}
	if waitErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = waitErr.Error()
		}
		return nil, fmt.Errorf("secrets: git log in %s: %s", repoDir, msg)
	}

	// Workers finish in any order: sort by commit (log order), then path,
	// line and rule, so the report is the same on every run.
	slices.SortStableFunc(results, func(a, b result) int { return a.seq - b.seq })
	var out []Finding
	for i := 0; i < len(results); {
		j := i
		var commit []Finding
		for ; j < len(results) && results[j].seq == results[i].seq; j++ {
			commit = append(commit, results[j].findings...)
		}
		slices.SortStableFunc(commit, func(a, b Finding) int {
			return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.RuleID, b.RuleID))
		})
		out = append(out, commit...)
		i = j
	}
	return out, nil
}

// addedBlock is a run of consecutive lines one commit added to one file.
type addedBlock struct {
	seq       int // position of the commit in the log
	commit    string
	path      string
	firstLine int // 1-based line of the first added line in the new file
	text      string
}

// parseLogPatch reads `git log -p -U0 --format=%x00%H` and calls emit for
// each block of added lines. Hunk bodies are read by the line counts in
// their headers, so an added line that looks like a header ("+++ x",
// "diff --git") is never mistaken for one.
func parseLogPatch(r io.Reader, emit func(addedBlock)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		seq              = -1
		commit, path     string
		oldLeft, newLeft int
		nextNew          int
		block            strings.Builder
		blockStart       int
	)
	flush := func() {
		if block.Len() > 0 && path != "" {
			emit(addedBlock{seq: seq, commit: commit, path: path, firstLine: blockStart, text: block.String()})
		}
		block.Reset()
	}
	// inHunk consumes one line of a hunk body. It returns false for a line
	// that cannot be one (a hunk shorter than its header claims), which is
	// then read as a header.
	inHunk := func(line string) bool {
		switch {
		case strings.HasPrefix(line, "+") && newLeft > 0:
			if block.Len() == 0 {
				blockStart = nextNew
			}
			block.WriteString(line[1:])
			block.WriteByte('\n')
			newLeft--
			nextNew++
		case strings.HasPrefix(line, "-") && oldLeft > 0:
			oldLeft--
		case strings.HasPrefix(line, " ") && oldLeft > 0 && newLeft > 0:
			flush()
			oldLeft--
			newLeft--
			nextNew++
		case strings.HasPrefix(line, `\`):
			// "\ No newline at end of file"
		default:
			oldLeft, newLeft = 0, 0
			flush()
			return false
		}
		if oldLeft == 0 && newLeft == 0 {
			flush()
		}
		return true
	}
	for {
		raw, err := br.ReadString('\n')
		if raw == "" && err != nil {
			flush()
			if err == io.EOF {
				return nil
			}
			return err
		}
		line := strings.TrimSuffix(raw, "\n")
		if (oldLeft > 0 || newLeft > 0) && inHunk(line) {
			continue
		}
		switch {
		case strings.HasPrefix(line, "\x00"):
			flush()
			seq++
			commit, path = line[1:], ""
		case strings.HasPrefix(line, "diff --git "):
			flush()
			path = ""
		case strings.HasPrefix(line, "+++ "):
			path = newPath(line[len("+++ "):])
		case strings.HasPrefix(line, "@@ "):
			flush()
			var ok bool
			oldLeft, newLeft, nextNew, ok = hunkHeader(line)
			if !ok {
				oldLeft, newLeft = 0, 0
			}
		}
	}
}

// newPath reads the new side's name from a "+++ " line: "b/dir/file",
// "/dev/null", or a C-quoted "\"b/odd\\tname\"".
func newPath(s string) string {
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return ""
		}
		s = u
	} else if i := strings.IndexByte(s, '\t'); i >= 0 {
		// Traditional diffs may append a timestamp after a tab.
		s = s[:i]
	}
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, "b/")
}

// hunkHeader parses "@@ -a[,b] +c[,d] @@ ...".
func hunkHeader(line string) (oldCount, newCount, newStart int, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 3 || !strings.HasPrefix(fields[1], "-") || !strings.HasPrefix(fields[2], "+") {
		return 0, 0, 0, false
	}
	_, oldCount, ok1 := rangeOf(fields[1][1:])
	newStart, newCount, ok2 := rangeOf(fields[2][1:])
	return oldCount, newCount, newStart, ok1 && ok2
}

func rangeOf(s string) (start, count int, ok bool) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	count = 1
	if hasCount {
		if count, err = strconv.Atoi(b); err != nil || count < 0 {
			return 0, 0, false
		}
	}
	return start, count, true
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
