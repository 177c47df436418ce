package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/engine/task"
	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/sandbox/shown"
	"github.com/bcode-dev/bcode/sandbox/shown/showntest"
)

// hostileTask is a real repository with a task whose branch (made by
// hand, as an agent's checkpoints would make it) changes a file's lines to
// the planted strings and adds a link named after each, pointing out of
// the tree, so that every name is a landing finding.
type hostileTask struct {
	repo, state, id string
}

func newHostileTask(t *testing.T, lines, names []showntest.Case) hostileTask {
	t.Helper()
	r := testrepo.FromFiles(t, map[string]string{
		"calc.go":   "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		"notes.txt": "one\n::error::pwned-context\ntwo\n",
	})
	state := t.TempDir()
	code, out, errOut := runTaskCmd(t, r.Dir, state, "create", "make Add add")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	_, out, _ = runTaskCmd(t, r.Dir, state, "status", id, "--json")
	var st task.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	r.Git("checkout", "-q", "-b", st.Task.Branch)
	var body strings.Builder
	for _, c := range lines {
		body.WriteString(c.Text + "\n")
	}
	r.WriteFile("notes.txt", "one\n::error::pwned-context\nTWO\n"+body.String())
	for _, c := range names {
		if err := os.Symlink("/etc/passwd", filepath.Join(r.Dir, c.Text)); err != nil {
			t.Fatalf("planting %s: %v", c.Name, err)
		}
	}
	r.Commit("the agent's change")
	r.Git("checkout", "-q", "main")
	return hostileTask{repo: r.Dir, state: state, id: id}
}

// jsonStrings is every string in a JSON document, one per line, as an
// editor or a viewer would render them.
func jsonStrings(t *testing.T, doc []byte) []byte {
	t.Helper()
	if raw := showntest.Raw(doc); raw != nil {
		t.Errorf("raw hidden bytes in the JSON itself: %v", raw)
	}
	out, err := showntest.JSONStrings(doc)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return out
}

// decodedJSON is how a planted string reaches a reader of JSON: each byte
// that is not UTF-8 is U+FFFD already (encoding/json), the rest as Text.
func decodedJSON(s string) string { return shown.Text(string([]rune(s))) }

// TestShownCLI feeds the attack suite through every CLI path that shows a
// task: its diff (changed lines), its status and accept --force (file
// names in FINDING lines), and their JSON. No hidden rune or byte reaches
// the terminal, and a name cannot forge or blank a FINDING line.
func TestShownCLI(t *testing.T) {
	names := showntest.Options{Unplantable: "\x00/"}
	lines := showntest.Options{Shown: shown.Text, Lines: true, Unplantable: "\x00\n"}
	both := func(t *testing.T) hostileTask {
		return newHostileTask(t, showntest.Cases(lines), showntest.Cases(names))
	}
	paths := []struct {
		name string
		opts showntest.Options
		run  func(t *testing.T, h hostileTask) []byte
	}{
		{"task diff", lines, func(t *testing.T, h hostileTask) []byte {
			code, out, errOut := runTaskCmd(t, h.repo, h.state, "diff", h.id)
			if code != 0 {
				t.Fatalf("diff: %d %s", code, errOut)
			}
			return []byte(out + errOut)
		}},
		{"task status", names, func(t *testing.T, h hostileTask) []byte {
			code, out, errOut := runTaskCmd(t, h.repo, h.state, "status", h.id)
			if code != 0 {
				t.Fatalf("status: %d %s", code, errOut)
			}
			if n := strings.Count("\n"+out, "\nFINDING"); n < len(showntest.Cases(names)) {
				t.Errorf("%d FINDING lines for %d hostile links", n, len(showntest.Cases(names)))
			}
			return []byte(out + errOut)
		}},
		{"task status --json", showntest.Options{Shown: decodedJSON, Lines: true, Unplantable: "\x00/"}, func(t *testing.T, h hostileTask) []byte {
			_, out, _ := runTaskCmd(t, h.repo, h.state, "status", h.id, "--json")
			return jsonStrings(t, []byte(out))
		}},
		{"task accept without --force", names, func(t *testing.T, h hostileTask) []byte {
			code, out, errOut := runTaskCmd(t, h.repo, h.state, "accept", h.id)
			if code == 0 {
				t.Fatalf("accept without --force landed hostile links:\n%s", out)
			}
			return []byte(out + errOut)
		}},
		{"task accept --force", names, func(t *testing.T, h hostileTask) []byte {
			code, out, errOut := runTaskCmd(t, h.repo, h.state, "accept", h.id, "--force")
			if code != 0 {
				t.Fatalf("accept --force: %d %s", code, errOut)
			}
			return []byte(out + errOut)
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			h := both(t)
			out := p.run(t, h)
			cs := showntest.Cases(p.opts)
			showntest.Check(t, p.opts, cs, out)
		})
	}
}

// TestShownDoctor: a model server's answer is model text too; doctor
// shows it (its first 512 bytes) on one line with every attack escaped.
func TestShownDoctor(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	opts := showntest.Options{}
	cs := showntest.Cases(opts)
	var answer []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(answer)
	}))
	defer srv.Close()
	var out []byte
	for len(cs) > 0 {
		answer = answer[:0]
		n := 0
		for n < len(cs) && len(answer)+len(cs[n].Text)+1 <= 500 {
			answer = append(answer, cs[n].Text+" "...)
			n++
		}
		var o, e bytes.Buffer
		run([]string{"doctor", "--repo", t.TempDir(), "--state", t.TempDir(), "--model-endpoint", srv.URL}, &o, &e)
		if !strings.Contains(o.String(), "FAIL model") {
			t.Fatalf("doctor did not report the model server:\n%s", o.String())
		}
		out = append(append(out, o.Bytes()...), e.Bytes()...)
		cs = cs[n:]
	}
	showntest.Check(t, opts, showntest.Cases(opts), out)
}

// goNames are the attacks a Go source file's name can carry: no NUL or
// slash, UTF-8 (the go command refuses other names), no newline
// or carriage return (the cover tool refuses them: TestShownErrorBlock
// shows that error), no BOM (the compiler refuses it in the //line
// directive the cover tool writes).
var goNames = showntest.Options{Unplantable: "\x00/\xff\n\r\ufeff"}

// TestShownCheckAndEvidence plants every attack in the names of a change's
// Go files: test files whose tests the change makes pass (bcode check's
// table names each file) and code files whose mutants no test covers
// (bcode evidence names each, in every output format).
func TestShownCheckAndEvidence(t *testing.T) {
	evidenceTools(t)
	cs := showntest.Cases(goNames)
	head := map[string]string{"f.go": "package lim\n\nfunc F() int { return 2 }\n"}
	for i, c := range cs {
		head[c.Text+"_test.go"] = fmt.Sprintf("package lim\n\nimport \"testing\"\n\nfunc TestAtk%03d(t *testing.T) {\n\tif F() != 2 {\n\t\tt.Fatal(F())\n\t}\n}\n", i)
		head[c.Text+".go"] = fmt.Sprintf("package lim\n\nfunc Under%03d(n int) bool { return n <= 10 }\n", i)
	}
	repo := evidenceRepo(t, map[string]string{"go.mod": "module lim\n\ngo 1.21\n", "f.go": "package lim\n\nfunc F() int { return 1 }\n"}, head)
	state := t.TempDir()
	bcode := func(t *testing.T, args ...string) []byte {
		var o, e bytes.Buffer
		code := run(args, &o, &e)
		t.Logf("bcode %s: exit %d", args[0], code)
		if code == 2 {
			t.Fatalf("bcode %v: exit 2\n%s\n%s", args, o.String(), e.String())
		}
		return append(o.Bytes(), e.Bytes()...)
	}
	t.Run("check", func(t *testing.T) {
		out := bcode(t, "check", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--sandbox", "host", "--state", state)
		withSuffix := make([]showntest.Case, len(cs))
		for i, c := range cs {
			withSuffix[i] = c
			withSuffix[i].Text += "_test.go"
		}
		showntest.Check(t, goNames, withSuffix, out)
	})
	t.Run("check --json", func(t *testing.T) {
		out := bcode(t, "check", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "--sandbox", "host", "--state", state, "--json")
		opts := showntest.Options{Shown: decodedJSON, Lines: true, Unplantable: goNames.Unplantable}
		showntest.Check(t, opts, cs, jsonStrings(t, out[:bytes.LastIndexByte(out, '}')+1]))
	})
	for _, format := range []string{"", "--json", "--sarif", "--github"} {
		t.Run("evidence "+format, func(t *testing.T) {
			args := []string{"evidence", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "-q"}
			if format != "" {
				args = append(args, format)
			}
			t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(t.TempDir(), "summary.md"))
			out := bcode(t, args...)
			switch format {
			case "--sarif":
				checkSARIFURIs(t, out[:bytes.LastIndexByte(out, '}')+1], cs)
			case "--json":
				opts := showntest.Options{Shown: decodedJSON, Lines: true, Unplantable: goNames.Unplantable}
				showntest.Check(t, opts, cs, jsonStrings(t, out[:bytes.LastIndexByte(out, '}')+1]))
			case "--github":
				// Annotations stop at GitHubAnnotationLimit: check what is
				// there, and that every line is bcode's own.
				if raw := showntest.Raw(out); raw != nil {
					t.Errorf("hidden runes in annotations: %v", raw)
				}
				for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					if !strings.HasPrefix(l, "::") && !strings.HasPrefix(l, "bcode") {
						t.Errorf("a line bcode did not write: %q", l)
					}
				}
			default:
				withSuffix := make([]showntest.Case, len(cs))
				for i, c := range cs {
					withSuffix[i] = c
					withSuffix[i].Text += ".go"
				}
				showntest.Check(t, goNames, withSuffix, out)
			}
		})
	}
}

// TestShownErrorBlock: an error that quotes a hostile name (here the cover
// tool's, refusing a file name with a newline) is shown with its controls
// escaped and its continuation lines marked, so the name cannot forge a
// line; the suite runs over the error's text.
func TestShownErrorBlock(t *testing.T) {
	evidenceTools(t)
	cs := showntest.Cases(showntest.Options{Unplantable: "\x00/\xff"})
	head := map[string]string{}
	for i, c := range cs {
		head[c.Text+".go"] = fmt.Sprintf("package lim\n\nfunc Under%03d(n int) bool { return n <= 10 }\n", i)
	}
	head["f_test.go"] = "package lim\n\nimport \"testing\"\n\nfunc TestUnder(t *testing.T) {\n\tif !Under000(1) {\n\t\tt.Fatal()\n\t}\n}\n"
	repo := evidenceRepo(t, map[string]string{"go.mod": "module lim\n\ngo 1.21\n", "f.go": "package lim\n"}, head)
	var o, e bytes.Buffer
	code := run([]string{"evidence", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD", "-q"}, &o, &e)
	if code != 2 || !strings.Contains(e.String(), "newline") {
		t.Fatalf("evidence over a file name with a newline: exit %d, want the cover tool's refusal\n%s", code, e.String())
	}
	out := append(o.Bytes(), e.Bytes()...)
	if raw := showntest.Raw(out); raw != nil {
		t.Errorf("hidden runes in the error: %v", raw)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "atk") {
			t.Errorf("a name started a line of its own: %q", l)
		}
	}
	t.Logf("%s", e.String())
}

// checkSARIFURIs: in SARIF a file name is a URI, percent-encoded, and each
// decodes to the planted name; the document's strings hold nothing hidden.
func checkSARIFURIs(t *testing.T, doc []byte, cs []showntest.Case) {
	t.Helper()
	if raw := showntest.Raw(jsonStrings(t, doc)); raw != nil {
		t.Errorf("hidden runes in SARIF strings: %v", raw)
	}
	uris := map[string]bool{}
	for _, m := range regexp.MustCompile(`"uri": "([^"]*)"`).FindAllSubmatch(doc, -1) {
		u := string(m[1])
		if strings.Trim(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/%") != "" {
			t.Errorf("uri %q is not percent-encoded", u)
		}
		if p, err := url.PathUnescape(u); err == nil {
			uris[p] = true
		}
	}
	for _, c := range cs {
		if !uris[c.Text+".go"] {
			t.Errorf("%s: no SARIF uri names %q", c.Name, c.Text+".go")
		}
	}
}

// TestShownTaskText: a task's free text (its goal here; reasons and model
// text travel the same way, as event data) reaches `task events --json`
// and `task list --json` with every attack escaped, and the one-line
// summaries (`task events`, `task status`, `task list`) cut it short but
// let nothing hidden or forged through.
func TestShownTaskText(t *testing.T) {
	r := testrepo.FromFiles(t, map[string]string{"calc.go": "package calc\n"})
	state := t.TempDir()
	opts := showntest.Options{Shown: decodedJSON, Lines: true, Unplantable: "\x00"}
	cs := showntest.Cases(opts)
	var goal strings.Builder
	for _, c := range cs {
		goal.WriteString(c.Text + "\n")
	}
	code, out, errOut := runTaskCmd(t, r.Dir, state, "create", goal.String())
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	for _, args := range [][]string{{"events", id, "--json"}, {"list", "--json"}} {
		t.Run(args[0]+" --json", func(t *testing.T) {
			_, out, _ := runTaskCmd(t, r.Dir, state, args...)
			showntest.Check(t, opts, cs, jsonStrings(t, []byte(out)))
		})
	}
	for _, args := range [][]string{{"events", id}, {"status"}, {"list"}} {
		t.Run(strings.Join(args[:1], " ")+" summary", func(t *testing.T) {
			_, out, errOut := runTaskCmd(t, r.Dir, state, args...)
			all := []byte(out + errOut)
			if raw := showntest.Raw(all); raw != nil {
				t.Errorf("hidden runes reached the terminal: %v", raw)
			}
			if !strings.Contains(out, "atk001") {
				t.Errorf("the goal is not shown:\n%s%s", out, errOut)
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(strings.TrimLeft(l, " \t"), "atk") {
					t.Errorf("the goal started a line of its own: %q", l)
				}
			}
		})
	}
}
