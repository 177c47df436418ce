//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The agent's stdin and stdout are its channel to the gateway, and the
// terminal's commands run as the same user beside it. They must not be
// able to write that channel, and that is decided by the kernel, not by
// recognising commands:
//
//   - the agent is not dumpable (PR_SET_DUMPABLE 0): its /proc/<pid>/fd,
//     /proc/<pid>/mem and ptrace are refused to every process without
//     CAP_SYS_PTRACE, which nothing in the sandbox has (all capabilities
//     dropped, no-new-privileges);
//   - the channel is moved to close-on-exec descriptors and 0 and 1 are
//     pointed at /dev/null, and every other inherited descriptor is made
//     close-on-exec, so no command inherits a descriptor of the channel;
//   - in the container the agent is PID 1 (docker.Config.NoInit): no init
//     process holds a dumpable copy of the container's stdio for a command
//     to open through /proc/1/fd. As PID 1 the agent reaps the orphans the
//     commands leave (reapOrphans).
//
// The gateway, on its side, ends the session at the first message that
// answers nothing it asked (wire.Conn.Serve).

// isolateChannel applies the above and returns the channel's two ends.
func isolateChannel() (in, out *os.File, err error) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, nil, fmt.Errorf("making the agent non-dumpable: %w", err)
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		// Kernels before 5.11: one descriptor at a time.
		ents, rerr := os.ReadDir("/proc/self/fd")
		if rerr != nil {
			return nil, nil, fmt.Errorf("marking inherited descriptors close-on-exec: %v, %v", err, rerr)
		}
		for _, e := range ents {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
				unix.CloseOnExec(fd)
			}
		}
	}
	inFD, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, nil, fmt.Errorf("moving the channel's input: %w", err)
	}
	outFD, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, nil, fmt.Errorf("moving the channel's output: %w", err)
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening /dev/null: %w", err)
	}
	for _, fd := range []int{0, 1} {
		if err := unix.Dup3(null, fd, 0); err != nil {
			return nil, nil, fmt.Errorf("detaching descriptor %d from the channel: %w", fd, err)
		}
	}
	unix.Close(null)
	return os.NewFile(uintptr(inFD), "gateway-in"), os.NewFile(uintptr(outFD), "gateway-out"), nil
}

// children are the processes the agent started and still waits for
// (exec.Cmd.Wait reaps them); reapOrphans leaves them alone.
type children struct {
	mu   sync.Mutex
	live map[int]bool
}

var spawned = &children{live: map[int]bool{}}

// start starts cmd and records it, under the lock reapOrphans scans with,
// so a child that exits at once is never taken for an orphan.
func (c *children) start(cmd *exec.Cmd) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	c.live[cmd.Process.Pid] = true
	return nil
}

// done forgets pid once its Wait has returned.
func (c *children) done(pid int) {
	c.mu.Lock()
	delete(c.live, pid)
	c.mu.Unlock()
}

// reapOrphans waits for every zombie whose parent is this process and
// that no exec.Cmd waits for: processes a command started in a new
// session (escaping its group's kill) that were handed to PID 1 when
// their parent died.
func (c *children) reapOrphans() {
	c.mu.Lock()
	defer c.mu.Unlock()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || c.live[pid] {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] != "Z" || f[1] != strconv.Itoa(self) {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}

// reapLoop runs reapOrphans on each SIGCHLD, and every few seconds in case
// one was coalesced, until ctx ends. Only PID 1 needs it.
func reapLoop(ctx context.Context) {
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGCHLD)
	defer signal.Stop(sig)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		case <-tick.C:
		}
		spawned.reapOrphans()
	}
}
