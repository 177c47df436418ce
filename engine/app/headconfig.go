package app

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/sandbox"
	"github.com/bcode-dev/bcode/sandbox/git"
)

// headConfig is baseConfig at HEAD, the file's bytes kept by HEAD's tree
// (a tree's content never changes), so a pack on a HEAD seen before
// costs one git process, not five.
func headConfig(ctx context.Context, dir string) config.Config {
	head, err := git.HeadOf(ctx, dir)
	if err != nil {
		return config.Default()
	}
	cacheDir, cerr := sandbox.CacheDir("baseconfig")
	kept := filepath.Join(cacheDir, head.Tree)
	var data []byte
	if cerr == nil {
		data, err = sandbox.ReadPath(kept, maxBaseConfig+1)
	}
	if cerr != nil || err != nil {
		repo, err := git.Open(ctx, dir)
		if err != nil {
			return config.Default()
		}
		file, err := repo.ShowFile(ctx, head.Tree, config.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			data = []byte(configAbsent)
		case err != nil || len(file) > maxBaseConfig:
			return config.Default()
		default:
			data = append([]byte(configPresent), file...)
		}
		if cerr == nil {
			writeKept(cacheDir, head.Tree, data)
		}
	}
	cfg, err := config.FromBase(func(string) ([]byte, error) {
		if file, ok := bytes.CutPrefix(data, []byte(configPresent)); ok {
			return file, nil
		}
		return nil, fs.ErrNotExist
	})
	if err != nil {
		return config.Default()
	}
	return cfg
}

// What headConfig keeps per tree: the file's bytes after configPresent,
// or configAbsent alone.
const (
	configPresent = "present\n"
	configAbsent  = "absent\n"
	// maxBaseConfig bounds a kept configuration file.
	maxBaseConfig = 1 << 20
)

// writeKept writes data to dir/name through a new file renamed into
// place, best effort: what cannot be kept is read from git again.
func writeKept(dir, name string, data []byte) {
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(dir, name)) != nil {
		os.Remove(tmp.Name())
	}
}
