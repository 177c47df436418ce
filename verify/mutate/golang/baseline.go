package golang

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
)

// baseline is what the unmutated package's tests do: which tests exist,
// how long each takes alone, and which code blocks each one covers.
type baseline struct {
	Tests       []baseTest `json:"tests"`
	Quarantined []string   `json:"quarantined,omitempty"`
	// Blocks are every instrumented block, covered or not: code outside
	// all of them needs a fallback rule to find its tests.
	Blocks []block `json:"blocks"`
}

type baseTest struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration_ns"`
	Blocks   []block       `json:"blocks"` // covered blocks only
}

// block is a coverage block: the file's base name and a position range,
// start inclusive, end exclusive, as the cover tool writes them.
type block struct {
	File           string `json:"f"`
	SL, SC, EL, EC int
}

func (b block) contains(line, col int) bool {
	if line < b.SL || line > b.EL {
		return false
	}
	if line == b.SL && col < b.SC {
		return false
	}
	if line == b.EL && col >= b.EC {
		return false
	}
	return true
}

// loadBaseline returns p's baseline from the cache or by running it. With
// schema, a baseline that has to run is run from the schema binary, which
// then also runs the mutants (one build instead of two).
func (s *session) loadBaseline(p *pkg, schema bool) error {
	if err := s.prepareBaseline(p, schema); err != nil {
		return err
	}
	return s.completeBaseline(p)
}

// pendingBaseline is a baseline that has to run, with what was built for
// it: prepareBaseline builds, completeBaseline runs the tests.
type pendingBaseline struct {
	file      string // the cache file it is written to
	inProcess bool
	schema    map[string][]byte // the schema files in the binary, if any
	bin       string
	cover     []coverFile
	// buildFailed: the one-process binary did not build; the per-process
	// baseline runs instead.
	buildFailed bool
	// shape is the baseline's shape key (see bodyedit.go), "" when a body
	// edit cannot keep it; decls and coverNames go into its index.
	shape      string
	decls      map[string][]declSpan
	coverNames []string
	// partial: only function bodies changed since a kept baseline, whose
	// tests that reached none of them keep their coverage.
	partial *partialBaseline
}

// prepareBaseline sets p.base from the cache, or builds what its run
// needs (the one-process binary) and leaves it in p.pending. It runs no
// test, so it can go on beside other work in the same snapshot.
func (s *session) prepareBaseline(p *pkg, schema bool) error {
	if !p.hasTests() {
		p.base = &baseline{}
		return nil
	}
	key, err := s.baseKey(p)
	if err != nil {
		return err
	}
	full := filepath.Join(s.opts.CacheDir, "baseline", key+".json")
	// A one-process baseline counts blocks of the files with mutants only;
	// it is kept apart, for the same files.
	inProcess := s.canCoverInProcess(p)
	sel := p.coverSet()
	file := full
	if inProcess && len(sel) < len(p.files) {
		h := sha256.New()
		for _, i := range sel {
			fmt.Fprintf(h, "%s\x00", p.files[i].name)
		}
		file = filepath.Join(s.opts.CacheDir, "baseline", key+"-"+hex.EncodeToString(h.Sum(nil)[:8])+".json")
	}
	if !s.opts.NoCache {
		for _, f := range []string{full, file} {
			if data, err := sandbox.ReadPath(f, maxCacheEntry); err == nil {
				var b baseline
				if json.Unmarshal(data, &b) == nil {
					p.base = &b
					s.rep.Stats.BaselineCached++
					return nil
				}
			}
		}
	}
	pend := &pendingBaseline{file: file, inProcess: inProcess}
	p.pending = pend
	if !inProcess {
		return nil
	}
	if !s.opts.NoCache {
		if shape, decls, ok := bodyShape(keyContent(s.keyFiles(p), intBits(s.goEnv("GOARCH"))), s.keyHeader(p)); ok {
			pend.shape, pend.decls, pend.coverNames = shape, decls, coverNames(p, sel)
			pend.partial = s.keptBaseline(p, shape, decls, pend.coverNames)
		}
	}
	if schema {
		pend.schema = p.schemaFiles()
		if pend.schema != nil && !keepsLines(p, pend.schema) {
			pend.schema = nil
		}
	}
	pend.bin, pend.cover, err = s.buildCoverBinary(p, pend.schema, sel)
	var cb errCoverBuild
	if errors.As(err, &cb) {
		pend.buildFailed = true
		p.mainFailed = true
		pend.file = full
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("baseline of %s: the per-test coverage binary did not build, so each test ran in a process of its own", p.relDir))
		return nil
	}
	return err
}

// completeBaseline runs p's pending baseline, if any, sets p.base and
// keeps it in the cache.
func (s *session) completeBaseline(p *pkg) error {
	pend := p.pending
	if pend == nil {
		return nil
	}
	p.pending = nil
	var b *baseline
	var err error
	if pend.inProcess && !pend.buildFailed {
		if pend.partial != nil {
			b, err = s.runPartialCover(p, pend.bin, pend.cover, pend.partial)
		} else {
			b, err = s.runCoverBaseline(p, pend.bin, pend.cover)
		}
		if err != nil {
			return err
		}
		s.rep.Stats.BaselineInProcess++
		if pend.schema != nil {
			p.schemaBin = pend.bin
			p.ordered = true
			p.schemaTried = true
			// The counters and the TestMain change nothing a mutant run
			// sees, so this binary serves as the schema's.
			if k, err := s.schemaKey(p, pend.schema); err == nil {
				s.storeSchema(p, k, p.schemaBin)
			}
		}
	} else {
		b, err = s.runBaseline(p)
		if err != nil {
			return err
		}
	}
	p.base = b
	if data, err := json.Marshal(b); err == nil {
		// A cache that cannot be written only costs time next run.
		if writeCacheFile(pend.file, data) == nil && pend.shape != "" && pend.inProcess && !pend.buildFailed {
			s.storeShape(pend.shape, shapeIndex{File: filepath.Base(pend.file), Cover: pend.coverNames, Decls: pend.decls})
		}
	}
	return nil
}

// writeCacheFile writes a cache entry whole or not at all (a file beside
// it, renamed over it), so a concurrent reader never sees half of one.
func writeCacheFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// cacheKey hashes everything the baseline depends on: the toolchain and
// the go settings that choose what is compiled (envVars), the runner (a
// container's answers are not the host's), the package's directory
// (sources, tests, testdata), go.mod and go.sum, and the sources of the
// module's packages the package and its tests import. The package's own
// non-test files are hashed without their trailing inert declarations when
// that is sound (keyContent): a save that only appends one keeps the key.
func (s *session) cacheKey(p *pkg) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "bcode-baseline-v3\x00%s\x00", s.keyHeader(p))
	for _, f := range keyContent(s.keyFiles(p), intBits(s.goEnv("GOARCH"))) {
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(h, "%s\x00%x\x00", f.rel, sum)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// keyHeader is what the baseline's key holds besides files: the
// toolchain, the package, the runner and the go settings.
func (s *session) keyHeader(p *pkg) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s", s.goVersion, p.list.ImportPath, s.runnerIdentity(), strings.Join(s.env, "\x00"))
}

// keyFiles are the files the baseline's key hashes (see cacheKey).
func (s *session) keyFiles(p *pkg) []keyFile {
	var files []keyFile
	addFile := func(path string) {
		data, err := mutate.ReadBeneath(s.root, path, maxSourceFile)
		if err != nil {
			return
		}
		// The path relative to the module: snapshots live in fresh
		// temporary directories, and the cache must survive them.
		rel := path
		if r, err := filepath.Rel(p.modRoot, path); err == nil {
			rel = filepath.ToSlash(r)
		}
		own := filepath.Dir(path) == p.list.Dir && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go")
		files = append(files, keyFile{rel: rel, data: data, own: own})
	}
	addDir := func(dir string, recurse bool) {
		_ = mutate.WalkBeneath(s.root, dir, func(path string, d fs.DirEntry) error {
			if d.IsDir() {
				if path != dir && (!recurse || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				addFile(path)
			}
			return nil
		})
	}
	addDir(p.list.Dir, false)
	addDir(filepath.Join(p.list.Dir, "testdata"), true)
	addFile(filepath.Join(p.modRoot, "go.mod"))
	addFile(filepath.Join(p.modRoot, "go.sum"))
	for _, dir := range s.moduleDepDirs(p) {
		entries, _ := readDirBeneath(s.root, dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				addFile(filepath.Join(dir, e.Name()))
			}
		}
	}
	return files
}

// runnerIdentity names the sandbox for the key: its name and type, and
// for a runner that can name what its commands see (a container: the
// image's id, user, limits, mounts), that too. One that cannot say gets a
// name of this run alone, so nothing it stores is taken by another run.
func (s *session) runnerIdentity() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runnerID != "" {
		return s.runnerID
	}
	id := fmt.Sprintf("%s %T", s.runner.Name(), s.runner)
	if ri, ok := s.runner.(verify.RunnerIdentity); ok {
		more, err := ri.Identity(s.ctx)
		if err != nil {
			var nonce [16]byte
			_, _ = rand.Read(nonce[:])
			more = fmt.Sprintf("unkeyed %x", nonce)
		}
		id += " " + more
	}
	s.runnerID = id
	return id
}

// intBits is the size of int on goarch.
func intBits(goarch string) int {
	switch goarch {
	case "386", "arm", "mips", "mipsle":
		return 32
	}
	return 64
}

// moduleDepDirs are the directories of the main module's packages that p
// and its tests import, in import path order.
func (s *session) moduleDepDirs(p *pkg) []string {
	deps := map[string]bool{}
	for _, d := range p.list.Deps {
		deps[d] = true
	}
	for _, d := range append(append([]string(nil), p.list.TestImports...), p.list.XTestImports...) {
		deps[d] = true
	}
	names := make([]string, 0, len(deps))
	for d := range deps {
		names = append(names, d)
	}
	sort.Strings(names)
	modPath := ""
	if p.list.Module != nil {
		modPath = p.list.Module.Path
	}
	var dirs []string
	for _, d := range names {
		if l, ok := p.all[d]; ok {
			if l.Module != nil && l.Module.Main {
				dirs = append(dirs, l.Dir)
			}
		} else if modPath != "" && (d == modPath || strings.HasPrefix(d, modPath+"/")) {
			dirs = append(dirs, filepath.Join(p.modRoot, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(d, modPath), "/"))))
		}
	}
	return dirs
}

// runBaseline builds p's test binary with coverage, runs every test alone
// (recording its coverage and time), then the whole binary once more. A
// test that fails both times makes the baseline red; one whose two runs
// disagree is quarantined.
func (s *session) runBaseline(p *pkg) (*baseline, error) {
	s.p.Step("baseline of %s: building tests with coverage", p.relDir)
	bin := filepath.Join(s.tmp, fmt.Sprintf("pkg%d.base.test", p.num))
	res, err := s.testBuild(p.list.Dir, bin, "-cover", "-covermode=set")
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, &mutate.BaselineError{Package: p.relDir, Detail: "its tests do not build:\n" + firstLines(string(res.Stderr), 8)}
	}
	res, err = mutate.RunBaseline(s.ctx, s.runner, "listing the tests of "+p.relDir, sandbox.Command{Dir: p.list.Dir, Args: []string{bin, "-test.list", "."}}, 0)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, &mutate.BaselineError{Package: p.relDir, Detail: "listing its tests failed:\n" + firstLines(string(res.Stdout)+string(res.Stderr), 8)}
	}
	var names []string
	for _, n := range strings.Fields(string(res.Stdout)) {
		if strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Example") || strings.HasPrefix(n, "Fuzz") {
			names = append(names, n)
		}
	}
	s.p.Step("baseline of %s: running %d tests one by one for coverage", p.relDir, len(names))
	alone := make([]baseTest, len(names))
	passedAlone := make([]bool, len(names))
	var mu sync.Mutex
	var firstErr error
	var allBlocks []block
	mutate.Parallel(s.opts.Workers, len(names), func(i int) {
		prof := filepath.Join(s.tmp, fmt.Sprintf("pkg%d.cover%d", p.num, i))
		res, err := mutate.RunBaseline(s.ctx, s.runner, "the baseline of "+p.relDir+"."+names[i], sandbox.Command{
			Dir:  p.list.Dir,
			Args: []string{bin, "-test.run", "^" + regexp.QuoteMeta(names[i]) + "$", "-test.count=1", "-test.coverprofile=" + prof},
		}, 0)
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return
		}
		covered, all, perr := readProfile(prof)
		if _, refused := sandbox.Refused(perr); refused {
			mu.Lock()
			if firstErr == nil {
				firstErr = perr
			}
			mu.Unlock()
			return
		}
		alone[i] = baseTest{Name: names[i], Duration: res.Duration, Blocks: covered}
		mu.Lock()
		if len(all) > len(allBlocks) {
			allBlocks = all
		}
		mu.Unlock()
		passedAlone[i] = res.ExitCode == 0 && !res.TimedOut
	})
	if firstErr != nil {
		return nil, firstErr
	}
	s.p.Step("baseline of %s: running the tests together to find flaky ones", p.relDir)
	var aloneTook time.Duration
	for _, a := range alone {
		aloneTook += a.Duration
	}
	res, err = mutate.RunBaseline(s.ctx, s.runner, "the baseline of "+p.relDir+" (tests together)", sandbox.Command{Dir: p.list.Dir, Args: []string{bin, "-test.count=1", "-test.v"}}, aloneTook)
	if err != nil {
		return nil, err
	}
	together := topLevelResults(string(res.Stdout))
	b := &baseline{Blocks: allBlocks}
	var red []string
	for i, n := range names {
		passed, seen := together[n]
		switch {
		case passedAlone[i] && (!seen || passed):
			b.Tests = append(b.Tests, alone[i])
		case !passedAlone[i] && seen && !passed:
			red = append(red, n)
		case !passedAlone[i] && !seen && res.ExitCode != 0:
			red = append(red, n)
		default:
			b.Quarantined = append(b.Quarantined, p.relDir+":"+n)
		}
	}
	if len(red) > 0 {
		return nil, &mutate.BaselineError{Package: p.relDir, Failed: red}
	}
	return b, nil
}

var resultLine = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(`)

// topLevelResults reads `-test.v` output: test name -> passed, for
// top-level tests (subtest lines are indented).
func topLevelResults(out string) map[string]bool {
	m := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		if g := resultLine.FindStringSubmatch(sc.Text()); g != nil {
			m[g[2]] = g[1] != "FAIL"
		}
	}
	return m
}

// readProfile parses a coverage profile into its covered blocks and all
// its blocks.
func readProfile(path string) (covered, all []block, err error) {
	data, err := sandbox.ReadPath(path, maxProfile)
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "mode:") {
			continue
		}
		// import/path/file.go:SL.SC,EL.EC NUM COUNT
		colon := strings.LastIndex(line, ":")
		if colon < 0 {
			continue
		}
		fields := strings.Fields(line[colon+1:])
		if len(fields) != 3 {
			continue
		}
		var b block
		if _, err := fmt.Sscanf(fields[0], "%d.%d,%d.%d", &b.SL, &b.SC, &b.EL, &b.EC); err != nil {
			continue
		}
		b.File = filepath.Base(line[:colon])
		all = append(all, b)
		if fields[2] != "0" {
			covered = append(covered, b)
		}
	}
	return covered, all, nil
}
