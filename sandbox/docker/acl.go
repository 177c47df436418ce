//go:build !windows

package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/bcode-dev/bcode/sandbox"
)

// GrantWrite lets uid read and write everything below dir (but not the git
// directory) by adding a POSIX ACL entry for it, and a default entry on each
// directory so files created later — by the host or in the container —
// inherit it.
//
// Why an ACL and not chown: when bcode runs as root, its worktrees belong to
// root, and the container must not run as root. Handing the files to the
// sandbox user would make git on the host refuse the worktree ("dubious
// ownership") and leave files the user cannot edit; an ACL keeps the owner
// and only adds the sandbox user. A non-root bcode runs its containers as
// its own uid and needs none of this.
//
// POSIX ACL semantics apply to what the host creates afterwards: a new
// file's mask is its creation mode's group bits, so a file made 0644 or a
// directory made 0755 is not writable for the sandbox user until GrantWrite
// runs again. The Runner therefore calls it before every command; entries
// already in place are left alone (no write, no ctime change for git to
// notice).
func GrantWrite(dir string, uid int) error {
	// Walked beneath dir: no link is followed into another directory. Each
	// ACL is set on the object a handle opened beneath dir holds (through
	// /proc/self/fd), not on a path: a directory a test swaps for a link to
	// /etc between the listing and the write cannot take the grant out of
	// the tree. Without openat2, by path as before.
	conf, err := sandbox.OpenConfined(dir)
	if err != nil {
		return err
	}
	defer conf.Close()
	return conf.WalkDir(".", func(slash string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && slash != "." {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if t := d.Type(); !t.IsDir() && !t.IsRegular() {
			return nil // ACLs do not apply to links; devices and fifos stay as they are
		}
		target, follow := filepath.Join(dir, filepath.FromSlash(slash)), false
		info, err := d.Info()
		h, herr := conf.Handle(slash)
		switch {
		case herr == nil:
			defer h.Close()
			if info, err = h.Stat(); err != nil {
				return err
			}
			target, follow = "/proc/self/fd/"+strconv.Itoa(int(h.Fd())), true
		case errors.Is(herr, fs.ErrNotExist):
			return nil // gone since the listing
		case !errors.Is(herr, sandbox.ErrNoHandle):
			return herr
		}
		if err != nil {
			return err
		}
		mode := info.Mode()
		if !mode.IsDir() && !mode.IsRegular() {
			return nil // swapped since the listing
		}
		perm := uint16(6) // rw
		if mode.IsDir() || mode.Perm()&0o100 != 0 {
			perm = 7 // rwx: directories need x to be entered, executables to run
		}
		if err := setACL(target, follow, "system.posix_acl_access", mode.Perm(), uid, perm); err != nil {
			return err
		}
		if mode.IsDir() {
			if err := setACL(target, follow, "system.posix_acl_default", mode.Perm(), uid, 7); err != nil {
				return err
			}
		}
		return nil
	})
}

// ACL tags and the xattr layout, from linux/posix_acl_xattr.h.
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xFFFFFFFF
)

// setACL writes an ACL that keeps mode's owner, group and other bits and
// adds uid with perm. The mask is the union of the group and uid entries so
// neither is cut back.
//
// follow: path is a /proc/self/fd handle, whose magic link must be followed
// to reach the object; otherwise a final link is not followed.
func setACL(path string, follow bool, attr string, mode fs.FileMode, uid int, perm uint16) error {
	owner := uint16(mode>>6) & 7
	group := uint16(mode>>3) & 7
	other := uint16(mode) & 7
	if attr == "system.posix_acl_default" {
		owner |= 6 // new files stay writable by their creator
	}
	type entry struct {
		tag, perm uint16
		id        uint32
	}
	entries := []entry{
		{aclUserObj, owner, aclNoID},
		{aclUser, perm, uint32(uid)},
		{aclGroupObj, group, aclNoID},
		{aclMask, group | perm, aclNoID},
		{aclOther, other, aclNoID},
	}
	if hasACLEntry(path, follow, attr, uid, perm) {
		return nil
	}
	buf := make([]byte, 4, 4+8*len(entries))
	binary.LittleEndian.PutUint32(buf, aclVersion)
	for _, e := range entries {
		buf = binary.LittleEndian.AppendUint16(buf, e.tag)
		buf = binary.LittleEndian.AppendUint16(buf, e.perm)
		buf = binary.LittleEndian.AppendUint32(buf, e.id)
	}
	set := unix.Lsetxattr
	if follow {
		set = unix.Setxattr
	}
	if err := set(path, attr, buf, 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("%s: the filesystem does not support POSIX ACLs, which a root bcode needs to let the non-root sandbox user write the worktree (run bcode as a normal user, or keep worktrees on ext4/xfs/btrfs/tmpfs): %w", path, err)
		}
		return fmt.Errorf("granting the sandbox user access to %s: %w", path, err)
	}
	return nil
}

// hasACLEntry reports whether path's ACL attr already grants uid perm, with
// a mask that does not cut it back.
func hasACLEntry(path string, follow bool, attr string, uid int, perm uint16) bool {
	buf := make([]byte, 512)
	get := unix.Lgetxattr
	if follow {
		get = unix.Getxattr
	}
	n, err := get(path, attr, buf)
	if err != nil || n < 4 || (n-4)%8 != 0 || binary.LittleEndian.Uint32(buf) != aclVersion {
		return false
	}
	user, mask := false, false
	for off := 4; off+8 <= n; off += 8 {
		tag := binary.LittleEndian.Uint16(buf[off:])
		p := binary.LittleEndian.Uint16(buf[off+2:])
		id := binary.LittleEndian.Uint32(buf[off+4:])
		switch {
		case tag == aclUser && id == uint32(uid) && p&perm == perm:
			user = true
		case tag == aclMask && p&perm == perm:
			mask = true
		}
	}
	return user && mask
}
