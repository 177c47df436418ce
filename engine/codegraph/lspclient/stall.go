package lspclient

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"
)

// ErrStalled: the server had a request to answer and did no work for
// StallLimit, or used more than CPULimit of CPU time. Both are measured
// in the server's own CPU time, which the kernel accounts: a server that
// works slowly on a busy machine is waited for, one that sits idle or
// spins is not, whatever the machine's load.
var ErrStalled = errors.New("lspclient: the language server stopped working on its answer")

const (
	// StallLimit is how long a server with a pending request may use no
	// CPU time at all.
	StallLimit = 10 * time.Second
	// CPULimit is the CPU time a server may use over its whole life.
	CPULimit = 90 * time.Second
)

// watch closes c.stalled when the server stalls or spins (see ErrStalled).
// Where /proc cannot say the server's CPU time it watches nothing, and the
// caller's context alone bounds each call.
func (c *Client) watch(pid int) {
	last, ok := cpuTime(pid)
	if !ok {
		return
	}
	idle := time.Duration(0)
	const tick = 500 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		now, ok := cpuTime(pid)
		if !ok {
			return
		}
		c.mu.Lock()
		waiting := len(c.pending) > 0
		c.mu.Unlock()
		switch {
		case now >= CPULimit:
		case now > last || !waiting:
			idle, last = 0, now
			continue
		default:
			if idle += tick; idle < StallLimit {
				continue
			}
		}
		close(c.stalled)
		return
	}
}

// cpuTime is pid's CPU time, user and system, with its children that
// ended (fields 14 to 17 of /proc/PID/stat, in clock ticks of 1/100 s,
// which Linux uses for every architecture's USER_HZ).
func cpuTime(pid int) (time.Duration, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 > len(data) {
		return 0, false
	}
	f := bytes.Fields(data[i+2:])
	if len(f) < 15 {
		return 0, false
	}
	var ticks int64
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, true
}
