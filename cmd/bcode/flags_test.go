package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestNumericFlagBoundaries runs every numeric flag of every subcommand at
// its boundaries: the smallest and largest accepted values get past the
// flags (the command then fails on what it is pointed at, not on the
// number), and one past each end, 2^63-1, 2^63, a negative and a word are
// refused at parse time with exit 2 and the range in the message.
func TestNumericFlagBoundaries(t *testing.T) {
	notRepo := t.TempDir()
	state := t.TempDir()
	type flagCase struct {
		cmd      []string // the command, with args that fail fast after parsing
		flag     string
		min, max string
		below    string // "" when min is the type's own floor
		above    string
		rangeMsg string
	}
	dur := func(d time.Duration) string { return d.String() }
	ns := func(d time.Duration) string { return fmt.Sprintf("%dns", d) }
	cases := []flagCase{
		{[]string{"task", "resume", "nosuchid", "--state", state}, "attempts", "0", "1000", "-1", "1001", "give a whole number from 0 to 1000"},
		{[]string{"task", "resume", "nosuchid", "--state", state}, "turns", "0", "100000", "-1", "100001", "give a whole number from 0 to 100000"},
		{[]string{"task", "resume", "nosuchid", "--state", state}, "tokens", "0", "1000000000", "-1", "1000000001", "give a whole number from 0 to 1000000000"},
		{[]string{"task", "resume", "nosuchid", "--state", state}, "wall", "0s", dur(maxMoreWall), "-1ns", ns(maxMoreWall + 1), "give a duration from 0s to 8760h0m0s"},
		{[]string{"task", "cancel", "nosuchid", "--state", state}, "wait", "1s", dur(maxTimeout), "999ms", ns(maxTimeout + 1), "give a duration from 1s to 168h0m0s"},
		{[]string{"ci", "--repo", notRepo, "--server", "/nonexistent/bcode-ls"}, "timeout", "1s", dur(maxTimeout), "0s", ns(maxTimeout + 1), "give a duration from 1s to 168h0m0s"},
		{[]string{"evidence", "-q", "--repo", notRepo}, "workers", "0", "1024", "-1", "1025", "give a whole number from 0 to 1024"},
		{[]string{"pack", "--goal", "x", "--repo", notRepo, "--state", state}, "budget", "200", "10000000", "199", "10000001", "give a whole number from 200 to 10000000"},
		{[]string{"model", "serve", "--llama-server", "/nonexistent/llama-server"}, "port", "1", "65535", "0", "65536", "give a whole number from 1 to 65535"},
		{[]string{"model", "serve", "--llama-server", "/nonexistent/llama-server"}, "ctx", "16384", "16777216", "16383", "16777217", "give a whole number from 16384 to 16777216"},
		{[]string{"model", "serve", "--llama-server", "/nonexistent/llama-server"}, "ngl", "0", "10000", "-1", "10001", "give a whole number from 0 to 10000"},
		{[]string{"model", "serve", "--llama-server", "/nonexistent/llama-server"}, "n-cpu-moe", "0", "10000", "-1", "10001", "give a whole number from 0 to 10000"},
		{[]string{"model", "serve", "--llama-server", "/nonexistent/llama-server"}, "load-timeout", "1s", dur(maxTimeout), "0s", ns(maxTimeout + 1), "give a duration from 1s to 168h0m0s"},
	}
	runArgs := func(args []string) (int, string) {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return code, out.String() + errb.String()
	}
	for _, c := range cases {
		name := strings.Join(c.cmd[:min(2, len(c.cmd))], " ") + " --" + c.flag
		t.Run(name, func(t *testing.T) {
			isDuration := strings.HasSuffix(c.min, "s")
			bad := []string{c.below, c.above, "9223372036854775807", "9223372036854775808", "-9223372036854775808", "many", ""}
			if isDuration {
				bad = append(bad, "2562047h", "2562048h", "5")
			}
			for _, v := range bad {
				if v == "" {
					continue
				}
				code, out := runArgs(append(append([]string{}, c.cmd...), "--"+c.flag, v))
				want := fmt.Sprintf("invalid value %q for flag -%s: ", v, c.flag)
				if code != 2 || !strings.Contains(out, want) {
					t.Errorf("--%s %s: exit %d, output %q; want exit 2 and %q", c.flag, v, code, out, want)
					continue
				}
				if !strings.Contains(out, c.rangeMsg) {
					t.Errorf("--%s %s: the message %q does not give the range %q", c.flag, v, firstLine(out), c.rangeMsg)
				}
			}
			for _, v := range []string{c.min, c.max} {
				code, out := runArgs(append(append([]string{}, c.cmd...), "--"+c.flag, v))
				if strings.Contains(out, "invalid value") || code == 0 {
					t.Errorf("--%s %s (in range): exit %d, %q", c.flag, v, code, firstLine(out))
				}
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
