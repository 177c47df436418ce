package scratch

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Mount is one line of the mount table: where a filesystem is mounted and
// what it is mounted from.
type Mount struct {
	Point  string // the mount point
	Source string // the device or bind source ("/dev/loop3")
}

// parseMountInfo reads /proc/self/mountinfo's format, in its order (a
// later mount on the same point is on top of an earlier one).
func parseMountInfo(b []byte) []Mount {
	var out []Mount
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		fields := strings.Fields(line)
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 5 || sep+2 >= len(fields) {
			continue
		}
		out = append(out, Mount{Point: unescapeMount(fields[4]), Source: unescapeMount(fields[sep+2])})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// holdsMount reports whether a mount point lies in dir or below it.
func holdsMount(mounts []Mount, dir string) bool {
	dir = filepath.Clean(dir)
	for _, m := range mounts {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
