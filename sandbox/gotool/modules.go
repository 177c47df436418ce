package gotool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// ErrBadModule is returned for a module path or version that is not a
// plain, canonical module@version: nothing is requested for it.
var ErrBadModule = errors.New("gotool: not a valid module version")

// ErrChecksum is returned when a downloaded module does not hash to what
// the go.sum that vouched for it says.
var ErrChecksum = errors.New("gotool: checksum mismatch")

// Sum is what a go.sum says of one module version: the hash of its zip
// ("" when only its go.mod is listed) and of its go.mod.
type Sum struct {
	Zip, GoMod string
}

// ParseSum reads a go.sum. Malformed lines are skipped: a go.sum is input,
// and a line that names no valid module version can vouch for nothing.
func ParseSum(data []byte) map[module.Version]Sum {
	out := map[module.Version]Sum{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || !strings.HasPrefix(f[2], "h1:") {
			continue
		}
		ver, goMod := strings.CutSuffix(f[1], "/go.mod")
		v := module.Version{Path: f[0], Version: ver}
		if Check(v) != nil {
			continue
		}
		s := out[v]
		if goMod {
			s.GoMod = f[2]
		} else {
			s.Zip = f[2]
		}
		out[v] = s
	}
	return out
}

// Check reports whether v is a module version bcode may ask a proxy for:
// a path that passes module.CheckPath (no query, no leading dash, no
// characters a proxy URL would misread) and a canonical semantic version
// (no "latest", no branch names).
func Check(v module.Version) error {
	if err := module.CheckPath(v.Path); err != nil {
		return fmt.Errorf("%w: %v", ErrBadModule, err)
	}
	if err := module.Check(v.Path, v.Version); err != nil {
		return fmt.Errorf("%w: %v", ErrBadModule, err)
	}
	return nil
}

// Wanted is every module version a go.mod and its go.sum name: required
// modules, versioned replacements and go.sum lines, sorted, each once.
// Versions that are not valid are dropped (the go command inside the
// sandbox reports them); filesystem replacements need no download.
func Wanted(gomod, gosum []byte) ([]module.Version, error) {
	seen := map[module.Version]bool{}
	if len(gomod) > 0 {
		// Parse, not ParseLax: the lax parser skips replace directives,
		// and a replacement is a module the go command would fetch.
		f, err := modfile.Parse("go.mod", gomod, nil)
		if err != nil {
			if f, err = modfile.ParseLax("go.mod", gomod, nil); err != nil {
				return nil, fmt.Errorf("gotool: go.mod: %w", err)
			}
		}
		for _, r := range f.Require {
			seen[r.Mod] = true
		}
		for _, r := range f.Replace {
			if r.New.Version != "" {
				seen[r.New] = true
			}
		}
	}
	for v := range ParseSum(gosum) {
		seen[v] = true
	}
	out := make([]module.Version, 0, len(seen))
	for v := range seen {
		if Check(v) == nil {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b module.Version) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out, nil
}

// cachePath is where the module cache keeps v's file with ext (".mod",
// ".zip", ".info").
func (tc *Toolchain) cachePath(v module.Version, ext string) (string, error) {
	p, err := module.EscapePath(v.Path)
	if err != nil {
		return "", err
	}
	ver, err := module.EscapeVersion(v.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(tc.GOMODCACHE, "cache", "download", p, "@v", ver+ext), nil
}

// Cached reports whether the module cache already holds v's go.mod, and its
// zip too when zip is set.
func (tc *Toolchain) Cached(v module.Version, zip bool) bool {
	exts := []string{".mod"}
	if zip {
		exts = append(exts, ".zip")
	}
	for _, ext := range exts {
		p, err := tc.cachePath(v, ext)
		if err != nil {
			return false
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// Fetch downloads the module versions in pairs that the module cache lacks,
// through the user's proxy settings, and checks each against sums (what
// the go.sum that vouched for it says). The caller decides which pairs may
// be fetched; Fetch validates each (Check) before anything is requested
// and runs in an empty directory, so no go.mod, go.work or file of the code
// takes part. GOFLAGS is cleared and the user's GOSUMDB, GONOSUMDB and
// GOPRIVATE apply as the user set them. A version whose go.sum entry has
// only a go.mod hash gets only its go.mod. It returns the versions it
// requested.
func (tc *Toolchain) Fetch(ctx context.Context, pairs []module.Version, sums map[module.Version]Sum, l Limits) ([]module.Version, error) {
	var zips, mods []module.Version
	for _, v := range pairs {
		if err := Check(v); err != nil {
			return nil, fmt.Errorf("%s@%s: %w", v.Path, v.Version, err)
		}
		s, known := sums[v]
		zip := !known || s.Zip != ""
		if tc.Cached(v, zip) {
			continue
		}
		if zip {
			zips = append(zips, v)
		} else {
			mods = append(mods, v)
		}
	}
	if len(zips)+len(mods) == 0 {
		return nil, nil
	}
	empty, err := scratch.MkdirTemp("bcode-fetch-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(empty)
	if l.Timeout <= 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	var errs []error
	run := func(args []string, vs []module.Version) {
		if len(vs) == 0 {
			return
		}
		for _, v := range vs {
			args = append(args, v.Path+"@"+v.Version)
		}
		cmd := exec.CommandContext(ctx, tc.Go, args...)
		cmd.Dir = empty
		cmd.Env = tc.fetchEnv()
		scratch.Own(cmd)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		// Each answer says per module whether it came; a failed one does
		// not stop the others.
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var m struct{ Path, Version, Error string }
			if derr := dec.Decode(&m); derr == io.EOF {
				break
			} else if derr != nil {
				break
			}
			if m.Error != "" {
				errs = append(errs, fmt.Errorf("gotool: fetching %s@%s: %s", m.Path, m.Version, m.Error))
			}
		}
		if err != nil && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("gotool: go %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String())))
		}
	}
	run([]string{"mod", "download", "-json"}, zips)
	run([]string{"list", "-m", "-json", "-e"}, mods)
	requested := append(zips, mods...)
	for _, v := range requested {
		if err := tc.verify(v, sums[v]); err != nil {
			errs = append(errs, err)
		}
	}
	return requested, errors.Join(errs...)
}

// verify compares the cached go.mod and zip of v with the go.sum's hashes.
func (tc *Toolchain) verify(v module.Version, s Sum) error {
	if s.GoMod != "" {
		p, err := tc.cachePath(v, ".mod")
		if err != nil {
			return err
		}
		if data, err := os.ReadFile(p); err == nil {
			h, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(data)), nil
			})
			if err == nil && h != s.GoMod {
				return fmt.Errorf("%w: %s@%s/go.mod is %s, go.sum says %s", ErrChecksum, v.Path, v.Version, h, s.GoMod)
			}
		}
	}
	if s.Zip != "" {
		p, err := tc.cachePath(v, ".zip")
		if err != nil {
			return err
		}
		if _, err := os.Stat(p); err == nil {
			h, err := dirhash.HashZip(p, dirhash.Hash1)
			if err == nil && h != s.Zip {
				return fmt.Errorf("%w: %s@%s is %s, go.sum says %s", ErrChecksum, v.Path, v.Version, h, s.Zip)
			}
		}
	}
	return nil
}

// fetchEnv is the user's environment without any Go setting, then the
// user's own proxy settings as `go env` resolved them, and bcode's: no
// flags, no go env file, no toolchain switch, no cgo.
func (tc *Toolchain) fetchEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GO") || k == "CGO_ENABLED" {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range proxyVars {
		if v := tc.proxy[k]; v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env,
		"GOROOT="+tc.GOROOT,
		"GOMODCACHE="+tc.GOMODCACHE,
		"GOCACHE="+tc.Cache,
		"GOPATH="+tc.Home,
		"GOENV=off",
		"GOFLAGS=",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GO111MODULE=on",
		"GOTELEMETRY=off",
		"CGO_ENABLED=0",
	)
}

// String names a module version as the go command does.
func String(v module.Version) string { return v.Path + "@" + v.Version }
