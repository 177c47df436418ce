package docker

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/bcode-dev/bcode/sandbox"
)

// secretPatterns are base-name globs (matched case-insensitively) of files
// that commonly hold credentials. A repository may carry them by accident —
// a developer's .env, a test key pair — and the agent must not see them.
var secretPatterns = []string{
	".env", ".env.*", ".envrc",
	"id_rsa", "id_rsa.*", "id_dsa", "id_dsa.*", "id_ecdsa", "id_ecdsa.*", "id_ed25519", "id_ed25519.*",
	"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
	"kubeconfig", "kubeconfig.*", "*.kubeconfig",
	"*.tfstate", "*.tfstate.*", "*.tfvars",
	"*credentials*.json", "service-account*.json", "credentials", "*.credentials",
	".netrc", ".git-credentials", ".pypirc", ".npmrc", ".dockercfg", ".htpasswd",
}

// secretPaths are slash paths whose last elements mark a secret regardless
// of the file's own name (kubectl's and Docker's configuration files).
var secretPaths = []string{".kube/config", ".docker/config.json", ".aws/credentials", ".ssh/*"}

// IsSecretPath reports whether the slash-separated path rel (relative to a
// worktree) names a file the sandbox masks.
func IsSecretPath(rel string) bool {
	lower := strings.ToLower(rel)
	base := path.Base(lower)
	for _, p := range secretPatterns {
		if ok, _ := path.Match(p, base); ok {
			return true
		}
	}
	for _, p := range secretPaths {
		n := strings.Count(p, "/") + 1
		parts := strings.Split(lower, "/")
		if len(parts) < n {
			continue
		}
		if ok, _ := path.Match(p, strings.Join(parts[len(parts)-n:], "/")); ok {
			return true
		}
	}
	return false
}

// mask is one path in the worktree to hide behind an empty read-only mount.
type mask struct {
	rel string // slash path relative to the worktree
	dir bool   // hide behind an empty directory rather than an empty file
}

// scanMasks walks the worktree and lists what must be hidden: the git
// directory (a file pointing into the user's repository for a linked
// worktree, a directory for a plain checkout) and every secret-looking file
// or directory. Symbolic links are not followed and not masked: inside the
// container they resolve against the container's own filesystem, where a
// link to a host path finds nothing of the host.
func scanMasks(worktree string) ([]mask, error) {
	var out []mask
	conf, err := sandbox.OpenConfined(worktree)
	if err != nil {
		return nil, err
	}
	defer conf.Close()
	err = conf.WalkDir(".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel == "." {
				return err
			}
			return nil // a directory we may not read is not one we can mask either
		}
		if rel == "." {
			return nil
		}
		t := d.Type()
		if t&fs.ModeSymlink != 0 {
			return nil
		}
		if d.Name() == ".git" {
			out = append(out, mask{rel: rel, dir: d.IsDir()})
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !t.IsDir() && !t.IsRegular() {
			return nil // sockets, fifos, devices: nothing to read
		}
		if IsSecretPath(rel) {
			out = append(out, mask{rel: rel, dir: d.IsDir()})
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out, err
}
