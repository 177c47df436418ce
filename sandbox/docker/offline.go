package docker

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// offlinePhrase is how the go command says it wanted the network.
const offlinePhrase = "module lookup disabled by GOPROXY=off"

var (
	downloading     = regexp.MustCompile(`(?m)^go: downloading (\S+) (v\S+)$`)
	cacheReadOnly   = regexp.MustCompile(`/cache/download/([^:\s]+):? .*read-only file system`)
	moduleAtVersion = regexp.MustCompile(`([A-Za-z0-9][A-Za-z0-9._~/-]*)@(v[0-9][^\s:]*|latest|upgrade|patch)`)
	providingPkg    = regexp.MustCompile(`providing package ([^\s:]+)`)
)

// ExplainOffline rewrites each line in which the go command reports it
// could not get a module because the sandbox runs offline, so the message
// says which dependency was missing, why, and what to do. Go reports it in
// one of two ways: "module lookup disabled by GOPROXY=off", or — when it
// first tries to lock the download in the read-only module cache — a
// "read-only file system" error below the cache's download directory,
// after a "go: downloading M V" line. Other lines are returned unchanged;
// out is not modified.
func ExplainOffline(out []byte) []byte {
	ro := bytes.Contains(out, []byte("read-only file system")) && bytes.Contains(out, []byte("/cache/download/"))
	if !bytes.Contains(out, []byte(offlinePhrase)) && !ro {
		return out
	}
	var fetched []string
	for _, m := range downloading.FindAllStringSubmatch(string(out), -1) {
		fetched = append(fetched, m[1]+"@"+m[2])
	}
	lines := strings.SplitAfter(string(out), "\n")
	var b strings.Builder
	for _, line := range lines {
		body := strings.TrimRight(line, "\n")
		roLine := cacheReadOnly.FindStringSubmatch(body)
		if !strings.Contains(body, offlinePhrase) && roLine == nil {
			b.WriteString(line)
			continue
		}
		what := "a module"
		if roLine != nil {
			if len(fetched) > 0 {
				what = "module " + strings.Join(fetched, ", ")
			} else {
				mod, _, _ := strings.Cut(roLine[1], "/@v/")
				what = "module " + mod
			}
		} else if m := moduleAtVersion.FindStringSubmatch(body); m != nil {
			what = "module " + m[1] + "@" + m[2]
		} else if m := providingPkg.FindStringSubmatch(body); m != nil {
			what = "the module providing package " + m[1]
		}
		fmt.Fprintf(&b, "bcode sandbox: %s was not prefetched: the sandbox has no network (GOPROXY=off) and sees only the task's modules (those the base commit's go.sum lists or the user approved), read-only. "+
			"After each turn the host runs 'go mod download' for what go.mod needs if the base commit's go.sum lists it; any other module waits for the user's approval (bcode task approve-module). [go: %s]",
			what, strings.TrimSpace(body))
		if strings.HasSuffix(line, "\n") {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}
