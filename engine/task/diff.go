package task

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bcode-dev/bcode/sandbox/git"
	"github.com/bcode-dev/bcode/verify/tamper"
)

// Limits of how a binary file is shown.
const (
	// diffPathBatch is how many paths one git diff names.
	diffPathBatch = 500
	// hexDumpMax is how much of one side of a binary file the hex dump
	// shows.
	hexDumpMax = 64 << 10
	// mostlyText is the share of a file's bytes that must be printable
	// text for it to be shown as escaped text rather than a hex dump.
	mostlyText = 0.9
)

// renderDiff is base..head as `git diff` prints it, except that no file is
// ever "Binary files differ": every file is diffed as text (--text, so no
// .gitattributes of the user's can hide one), and a file git would call
// binary (tamper.WhyBinary) gets a line saying why, with its lines escaped
// (NUL as \0, other controls and bytes that are not UTF-8 as \xNN) when it
// is mostly text, else a hex dump of each side.
func renderDiff(ctx context.Context, repo *git.Repo, base, head string) ([]byte, error) {
	entries, err := repo.DiffTree(ctx, base, head)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		for _, side := range [][2]string{{e.OldMode, e.OldBlob}, {e.NewMode, e.NewBlob}} {
			if side[0] != "" && side[0] != "160000" && side[0] != "120000" {
				ids = append(ids, side[1])
			}
		}
	}
	blobs, err := repo.ReadBlobs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the changed files: %w", err)
	}
	var text []string
	var out bytes.Buffer
	type binFile struct {
		path, why string
		old, new  []byte
	}
	var bins []binFile
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.Path] {
			continue
		}
		seen[e.Path] = true
		old, nw := blobs[e.OldBlob], blobs[e.NewBlob]
		why := tamper.WhyBinary(nw)
		if why == "" {
			why = tamper.WhyBinary(old)
		}
		if why == "" || strings.HasPrefix(e.OldMode, "12") || strings.HasPrefix(e.NewMode, "12") {
			text = append(text, e.Path)
			continue
		}
		bins = append(bins, binFile{e.Path, why, old, nw})
	}
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--text", "--no-renames", base, head, "--"}
	for len(text) > 0 {
		n := min(len(text), diffPathBatch)
		d, err := repo.Git(ctx, append(args, text[:n]...)...)
		if err != nil {
			return nil, err
		}
		out.Write(d)
		text = text[n:]
	}
	for _, b := range bins {
		if isMostlyText(b.old) && isMostlyText(b.new) {
			d, err := repo.Git(ctx, append(args, b.path)...)
			if err != nil {
				return nil, err
			}
			head, body, _ := bytes.Cut(d, []byte("\n"))
			fmt.Fprintf(&out, "%s\n# bcode: binary to git (%s); shown as escaped text\n%s", escapeBytes(head), b.why, escapeBytes(body))
			continue
		}
		fmt.Fprintf(&out, "diff --git %s %s\n# bcode: binary to git (%s); shown as a hex dump\n", quotePath("a/"+b.path), quotePath("b/"+b.path), b.why)
		for _, side := range []struct {
			name    string
			content []byte
		}{{"base", b.old}, {"head", b.new}} {
			if side.content == nil {
				fmt.Fprintf(&out, "# %s: no such file\n", side.name)
				continue
			}
			fmt.Fprintf(&out, "# %s: %d bytes\n", side.name, len(side.content))
			hexDump(&out, side.content)
		}
	}
	return out.Bytes(), nil
}

// isMostlyText: at least mostlyText of the bytes are printable UTF-8 or
// tabs and line ends.
func isMostlyText(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	good := 0
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if (r != utf8.RuneError || n > 1) && (r >= 0x20 && r != 0x7f || r == '\t' || r == '\n' || r == '\r') {
			good += n
		}
		i += n
	}
	return float64(good) >= mostlyText*float64(len(b))
}

// escapeBytes makes every byte visible: NUL as \0, a backslash doubled,
// other C0 controls (but tab and newline), DEL, C1 controls and bytes that
// are not UTF-8 as \xNN.
func escapeBytes(b []byte) []byte {
	var out bytes.Buffer
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&out, `\x%02x`, b[i])
		case r == 0:
			out.WriteString(`\0`)
		case r == '\\':
			out.WriteString(`\\`)
		case r == '\t' || r == '\n':
			out.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			for _, c := range b[i : i+n] {
				fmt.Fprintf(&out, `\x%02x`, c)
			}
		default:
			out.Write(b[i : i+n])
		}
		i += n
	}
	return out.Bytes()
}

// hexDump writes b as `hexdump -C` does (offset, 16 bytes, printable ASCII
// or '.'), up to hexDumpMax bytes.
func hexDump(out *bytes.Buffer, b []byte) {
	shown := b[:min(len(b), hexDumpMax)]
	for off := 0; off < len(shown); off += 16 {
		row := shown[off:min(off+16, len(shown))]
		fmt.Fprintf(out, "%08x ", off)
		for i := 0; i < 16; i++ {
			if i == 8 {
				out.WriteByte(' ')
			}
			if i < len(row) {
				fmt.Fprintf(out, " %02x", row[i])
			} else {
				out.WriteString("   ")
			}
		}
		out.WriteString("  |")
		for _, c := range row {
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			out.WriteByte(c)
		}
		out.WriteString("|\n")
	}
	if len(b) > len(shown) {
		fmt.Fprintf(out, "# … %d more bytes not shown\n", len(b)-len(shown))
	}
}

// quotePath quotes a path as git does when it holds anything but printable
// ASCII.
func quotePath(p string) string {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return fmt.Sprintf("%q", p)
		}
	}
	return p
}
