package scratch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStat reads state and start time from /proc/<pid>/stat. The command
// name (field 2) may hold spaces and parentheses, so fields are counted from
// the last ')'.
func procStat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("malformed /proc stat: %w", err)
	}
	return f[0][0], st, nil
}

func processStartTime(pid int) (uint64, bool) {
	_, st, err := procStat(pid)
	return st, err == nil
}

func processAlive(pid int, start uint64) bool {
	state, st, err := procStat(pid)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	if state == 'Z' || state == 'X' {
		return false
	}
	return start == 0 || st == start
}

// killOwned SIGKILLs every process whose environment carries OwnerEnv=owner
// (bcode's own process excepted), and returns how many it signalled. A
// process whose environment cannot be read is not one of ours to kill.
func killOwned(_, owner string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := []byte(OwnerEnv + "=" + owner + "\x00")
	self := os.Getpid()
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		if state, _, err := procStat(pid); err == nil && (state == 'Z' || state == 'X') {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// NoteGroup records a process group bcode started; on Linux the sweep finds
// processes by their environment instead, so there is nothing to record.
func NoteGroup(int) (forget func()) { return func() {} }
