package python

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// The interpreter probe and the syntax helper's first run each start the
// candidates (pyenv's python3 shim costs a second or more per start) to
// learn an answer that rarely changes: which interpreter imports pytest,
// which one parses. choiceCache keeps that answer on disk across gates, in
// bcode's cache directory, only for the host runner (a container's
// interpreters are not the host's files) and never for a snapshot's own
// .venv (a path inside one snapshot, and the agent's to plant).
//
// An entry is keyed by everything that decides the answer and that the host
// can read without running anything: the purpose, the candidates in order,
// the environment that resolves a bare name (PATH, PYENV_VERSION, HOME) and
// the snapshot's .python-version (pyenv's per-project choice). It is used
// only while every file it depends on (each candidate as resolved on PATH,
// the chosen executable, pytest's package) has the size and modification
// time it had, and for at most choiceTTL, so an interpreter installed or
// removed since is seen within that time even where no stamped file moved
// (pip install pytest into the shim's version, pyenv global).
// Only answers that found an interpreter are kept: a failure is probed again.

// choiceTTL bounds how long a kept answer is trusted.
const choiceTTL = time.Hour

// choiceDir is where kept answers live; a var so tests can move it.
var choiceDir = func() string {
	d, err := sandbox.CacheDir("python-interpreter")
	if err != nil {
		return ""
	}
	return d
}

// stamp is a file's identity as far as a stat tells.
type stamp struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime_ns"`
}

// choice is one kept answer.
type choice struct {
	Python string    `json:"python"`
	Stamps []stamp   `json:"stamps"`
	At     time.Time `json:"at"`
}

// choiceKey names the entry for purpose with candidates, seen from dir
// ("" when there is none).
func choiceKey(purpose, dir string, candidates []string) string {
	h := sha256.New()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(purpose)
	for _, c := range candidates {
		w(c)
	}
	w("\x01")
	for _, v := range []string{"PATH", "PYENV_VERSION", "HOME"} {
		w(v + "=" + os.Getenv(v))
	}
	if dir != "" {
		if b, err := sandbox.ReadFile(dir, ".python-version", 64<<10); err == nil {
			w(".python-version=" + string(b))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// stampsOf stats paths; bare names are resolved on PATH first. ok is false
// when one cannot be read: such an answer is not worth keeping.
func stampsOf(paths []string) ([]stamp, bool) {
	out := make([]stamp, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			lp, err := exec.LookPath(p)
			if err != nil {
				return nil, false
			}
			p = lp
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, false
		}
		out = append(out, stamp{Path: p, Size: fi.Size(), MTime: fi.ModTime().UnixNano()})
	}
	return out, true
}

// loadChoice returns the kept answer for key, if it still holds.
func loadChoice(key string) (string, bool) {
	d := choiceDir()
	if d == "" {
		return "", false
	}
	// The answer names a program the host will start (the syntax helper
	// runs outside any container): only a private directory and file are
	// believed, as saveChoice leaves them.
	for _, p := range []string{d, filepath.Join(d, key+".json")} {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || fi.Mode().Perm()&0o022 != 0 {
			return "", false
		}
	}
	b, err := sandbox.ReadFile(d, key+".json", 1<<20)
	if err != nil {
		return "", false
	}
	var c choice
	if json.Unmarshal(b, &c) != nil || c.Python == "" || len(c.Stamps) == 0 {
		return "", false
	}
	stamped := false
	for _, s := range c.Stamps {
		stamped = stamped || s.Path == c.Python || (!filepath.IsAbs(c.Python) && filepath.Base(s.Path) == c.Python)
	}
	if !stamped {
		return "", false
	}
	if age := time.Since(c.At); age < 0 || age > choiceTTL {
		return "", false
	}
	for _, s := range c.Stamps {
		fi, err := os.Stat(s.Path)
		if err != nil || fi.Size() != s.Size || fi.ModTime().UnixNano() != s.MTime {
			return "", false
		}
	}
	return c.Python, true
}

// saveChoice keeps python as the answer for key, valid while the files
// depends (candidates and what the probe learned) are unchanged. Errors
// are ignored: the cache only saves time.
func saveChoice(key, python string, depends []string) {
	d := choiceDir()
	if d == "" || python == "" {
		return
	}
	st, ok := stampsOf(depends)
	if !ok {
		return
	}
	b, err := json.Marshal(choice{Python: python, Stamps: st, At: time.Now()})
	if err != nil {
		return
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(d, key+".*.tmp")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if os.Rename(f.Name(), filepath.Join(d, key+".json")) != nil {
		os.Remove(f.Name())
	}
}
