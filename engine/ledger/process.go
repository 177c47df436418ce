package ledger

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// BootID identifies this boot of this machine (Linux's
// /proc/sys/kernel/random/boot_id), or "" where there is none. Two holders
// with the same boot id run on the same machine since its last boot, so a
// pid one of them recorded can be checked by the other.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// LocalHolder describes this process as a lease holder: its pid, its
// process start time and this machine's boot id. An empty owner becomes
// "host/pid/nonce", unique to this process's life.
func LocalHolder(owner string) Holder {
	pid := os.Getpid()
	host, _ := os.Hostname()
	if owner == "" {
		var nonce [4]byte
		rand.Read(nonce[:])
		owner = fmt.Sprintf("%s/%d/%s", host, pid, hex.EncodeToString(nonce[:]))
	}
	st, _ := processStartTime(pid)
	return Holder{Owner: owner, Host: host, PID: pid, BootID: BootID(), StartTime: st}
}

// procStat is what the ledger needs from /proc/<pid>/stat.
type procStat struct {
	state     byte   // R, S, D, Z, X, ...
	startTime uint64 // clock ticks after boot
}

// readProcStat parses /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may itself contain spaces and parentheses, so the fields
// are counted from the last ')'.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat starttime: %w", err)
	}
	return procStat{state: f[0][0], startTime: st}, nil
}

// processStartTime is pid's start time in clock ticks after boot, from
// /proc; false where /proc does not say.
func processStartTime(pid int) (uint64, bool) {
	s, err := readProcStat(pid)
	if err != nil {
		return 0, false
	}
	return s.startTime, true
}

// processAlive is the default liveness check. A zombie (killed, not yet
// reaped) counts as dead: it will never renew its lease. Without /proc it
// falls back to kill(pid, 0), where EPERM still means the process exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return true // unknown pid: cannot be judged dead, wait for the TTL
	}
	s, err := readProcStat(pid)
	if err == nil {
		return s.state != 'Z' && s.state != 'X'
	}
	if errors.Is(err, os.ErrNotExist) {
		if _, statErr := os.Stat("/proc/self/stat"); statErr == nil {
			return false // /proc works and has no such pid
		}
	}
	return signalZeroAlive(pid)
}
