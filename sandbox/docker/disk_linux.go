package docker

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bcode-dev/bcode/sandbox/scratch"
)

// diskImageName is the name of every disk image bcode makes, which is how
// a mount left behind by a killed runner is recognised as bcode's.
const diskImageName = "bcode-disk.img"

// disk is the runner's directory made, for the runner's life, the mount
// point of an ext4 filesystem of Config.DiskBytes in a sparse image file.
// Writes beyond it fail with ENOSPC, in the container and on the host
// alike, and the host's disk holds at most the image's size for it.
//
// Why a loop-mounted image: Docker's own size option (--storage-opt size)
// covers the container's writable layer only, which is read-only here
// anyway, and on overlay2 it needs xfs with project quotas; a bind mount
// has no size at all; a tmpfs would put the worktree in memory and out of
// the host's sight (the checkpoint reads it between turns). A filesystem
// image is the one bound the kernel enforces on a host directory on any
// filesystem, at the price of needing root to mount it.
//
// Runners of this process opened on the same directory share its disk
// (the first mounts it, the last to close releases it): a second disk
// mounted over the first would hide from the host what containers of the
// first write.
type disk struct {
	dir     string // the runner's directory, now the mount point
	work    string // private scratch directory holding the image
	discard bool   // on release, drop what was written instead of copying it back (all users asked)
	users   int
}

// disks are the mounted disks of this process, by directory.
var disks = struct {
	sync.Mutex
	m map[string]*disk
}{m: map[string]*disk{}}

// mountDisk copies dir's content into a fresh filesystem of size bytes and
// mounts it over dir. A bcode disk already mounted there (a killed
// runner's) is released first, its content copied back.
func mountDisk(ctx context.Context, dir string, size int64, discard bool) (*disk, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: mounting a filesystem needs root", ErrDiskLimit)
	}
	disks.Lock()
	defer disks.Unlock()
	if d := disks.m[dir]; d != nil {
		d.users++
		d.discard = d.discard && discard
		return d, nil
	}
	if img, ok := diskMountedAt(dir); ok {
		if err := releaseMounted(ctx, dir, false); err != nil {
			return nil, fmt.Errorf("%w: releasing the disk %s a killed runner left mounted on %s: %v", ErrDiskLimit, img, dir, err)
		}
	}
	work, err := scratch.MkdirTemp("bcode-disk-*")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDiskLimit, err)
	}
	d := &disk{dir: dir, work: work, discard: discard, users: 1}
	if err := d.mount(ctx, size); err != nil {
		os.RemoveAll(work)
		return nil, fmt.Errorf("%w: %v", ErrDiskLimit, err)
	}
	disks.m[dir] = d
	return d, nil
}

func (d *disk) mount(ctx context.Context, size int64) error {
	img := filepath.Join(d.work, diskImageName)
	f, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(size) // sparse: the host's disk holds only what is written
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// -m 0: no blocks reserved for root (the sandbox user gets all of it).
	// -i 8192: an inode per 8 KiB, for trees of many small files; running
	// out of inodes is ENOSPC too. Lazy inode tables and journal, and
	// noinit_itable below, keep mkfs and the kernel from writing zeros to
	// the host's disk.
	if err := runTool(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-i", "8192", "-L", "bcode-disk",
		"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", img); err != nil {
		return err
	}
	stage := filepath.Join(d.work, "stage")
	if err := os.Mkdir(stage, 0o700); err != nil {
		return err
	}
	const opts = "loop,nosuid,nodev,noinit_itable"
	if err := runTool(ctx, "mount", "-t", "ext4", "-o", opts, img, stage); err != nil {
		return err
	}
	// lost+found would appear in the worktree: root's, unreadable to the
	// sandbox user, and a directory the agent never made.
	err = os.Remove(filepath.Join(stage, "lost+found"))
	if err == nil {
		// "dir/." copies the directory's own mode, owner, times and ACLs
		// onto the filesystem's root too.
		err = runTool(ctx, "cp", "-a", "--reflink=never", "--", d.dir+"/.", stage)
	}
	if uerr := unmount(ctx, stage); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("copying %s into its disk of %d MiB (a bigger tree needs a bigger [sandbox] disk_mb): %w", d.dir, size>>20, err)
	}
	return runTool(ctx, "mount", "-t", "ext4", "-o", opts, img, d.dir)
}

// release unmounts the disk, after the runner's containers are gone, and
// copies what it holds back into the directory (unless discard), then
// removes the image.
func (d *disk) release(ctx context.Context) error {
	disks.Lock()
	defer disks.Unlock()
	if d.users--; d.users > 0 {
		return nil
	}
	delete(disks.m, d.dir)
	if err := releaseMounted(ctx, d.dir, d.discard); err != nil {
		return fmt.Errorf("%w: %v (the disk image stays in %s)", ErrDiskLimit, err, d.work)
	}
	return os.RemoveAll(d.work)
}

// releaseMounted unmounts the bcode disk on dir. Unless discard, the
// directory underneath is first made a copy of the disk's content: the
// disk is bound read-only at a private staging point (read-only, so that a
// sweep of a dead runner's scratch cannot delete through it), unmounted
// from dir, the old content below removed and the disk's copied in
// (finishRelease). The staging directory records dir (stagedFor), so a
// release a SIGKILL cut short is finished by the next ReleaseStaleDisks.
func releaseMounted(ctx context.Context, dir string, discard bool) error {
	if discard {
		return unmount(ctx, dir)
	}
	work, err := scratch.MkdirTemp("bcode-disk-out-*")
	if err != nil {
		return err
	}
	out := filepath.Join(work, stagingName(dir))
	if err := stageRelease(ctx, dir, work, out); err != nil {
		unmount(context.WithoutCancel(ctx), out)
		os.RemoveAll(work)
		return err
	}
	return finishRelease(ctx, dir, work, out)
}

// stagedFor names, in a staging directory, the directory its disk belongs
// to, for a path too long for stagingName.
const stagedFor = "dir"

// stagingName is the staging point's name: "out." and dir in base64url.
// A sweep of the dead owner's scratch may delete the stagedFor file, but
// not the name of a directory something is mounted on.
func stagingName(dir string) string {
	if name := "out." + base64.RawURLEncoding.EncodeToString([]byte(dir)); len(name) <= 255 {
		return name
	}
	return "out"
}

// stagedDir is the directory whose disk is staged at out.
func stagedDir(out string) (string, error) {
	if enc, ok := strings.CutPrefix(filepath.Base(out), "out."); ok {
		b, err := base64.RawURLEncoding.DecodeString(enc)
		return string(b), err
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(out), stagedFor))
	return string(b), err
}

// stageRelease binds dir's disk read-only at out and unmounts it from dir.
func stageRelease(ctx context.Context, dir, work, out string) error {
	if err := os.WriteFile(filepath.Join(work, stagedFor), []byte(dir), 0o600); err != nil {
		return err
	}
	if err := os.Mkdir(out, 0o700); err != nil {
		return err
	}
	// One mount(8) binds and makes the binding read-only, so no kill of
	// this process leaves a writable staging point between the two.
	if err := runTool(ctx, "mount", "--bind", "-o", "ro", dir, out); err != nil {
		return err
	}
	if err := unmount(ctx, dir); err != nil {
		return err
	}
	if _, still := diskMountedAt(dir); still {
		return fmt.Errorf("%s is still a disk mount after unmounting it", dir)
	}
	return nil
}

// finishRelease makes dir a copy of the staged disk at out, then drops the
// staging point. It can run again after a cut: it empties dir first.
//
// A kill between staging's bind and its unmount of dir leaves the disk on
// both: dir is unmounted first, or emptying it would empty the disk. A
// directory removed since (its task deleted) has nothing to receive the
// copy: the staged disk is dropped.
func finishRelease(ctx context.Context, dir, work, out string) error {
	for onSameFilesystem(dir, out) {
		if err := unmount(ctx, dir); err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := unmount(context.WithoutCancel(ctx), out); err != nil {
			return err
		}
		return os.RemoveAll(work)
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	if err := runTool(ctx, "cp", "-a", "--reflink=never", "--", out+"/.", dir); err != nil {
		return fmt.Errorf("copying the disk's content back into %s: %w", dir, err)
	}
	if err := unmount(context.WithoutCancel(ctx), out); err != nil {
		return err
	}
	return os.RemoveAll(work)
}

// onSameFilesystem reports whether a and b are directories on one mounted
// filesystem (the same device): a mount on both.
func onSameFilesystem(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}

// finishStaged finishes the releases dead owners cut short: a staging
// point whose scratch directory's owner is dead holds the only whole copy
// of its directory's disk, which is copied back before it goes.
func finishStaged(ctx context.Context, dead func(owner string) bool) (int, []error) {
	n := 0
	var errs []error
	for _, out := range mountPoints() {
		work := filepath.Dir(out)
		if !strings.HasPrefix(filepath.Base(out), "out") || !strings.HasPrefix(filepath.Base(work), "bcode-disk-out-") || !dead(filepath.Base(filepath.Dir(work))) {
			continue
		}
		dir, err := stagedDir(out)
		if err != nil {
			errs = append(errs, &StaleDiskError{Err: fmt.Errorf("the staging point %s names no directory: %w", out, err)})
			continue
		}
		if err := finishRelease(ctx, dir, work, out); err != nil {
			errs = append(errs, &StaleDiskError{Dir: dir, Err: fmt.Errorf("finishing a release a kill cut short: %w", err)})
			continue
		}
		n++
	}
	return n, errs
}

// ReleaseStaleDisks releases the disks that runners of dead processes
// left mounted (a SIGKILLed runner cannot release its own): each one's
// content is copied back into its directory and it is unmounted, so the
// next holder of a task can move or remove the worktree. A disk is a dead
// runner's when its image lies in a dead owner's scratch directory. A
// release a dead runner began is finished from its read-only staging
// point, which holds the only whole copy. It returns how many it released;
// each failure is a *StaleDiskError naming its directory.
func ReleaseStaleDisks(ctx context.Context) (int, error) {
	return releaseStale(ctx, scratch.OwnerDead)
}

func releaseStale(ctx context.Context, dead func(owner string) bool) (int, error) {
	if os.Geteuid() != 0 {
		return 0, nil // a non-root bcode mounts no disks
	}
	disks.Lock()
	defer disks.Unlock()
	n, errs := finishStaged(ctx, dead)
	for _, dir := range mountPoints() {
		if disks.m[dir] != nil || strings.HasPrefix(filepath.Base(filepath.Dir(dir)), "bcode-disk-out-") {
			continue
		}
		img, ok := diskMountedAt(dir)
		if !ok || !dead(filepath.Base(filepath.Dir(filepath.Dir(img)))) {
			continue
		}
		if err := releaseMounted(ctx, dir, false); err != nil {
			errs = append(errs, &StaleDiskError{Dir: dir, Err: err})
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// mountPoints lists this mount namespace's mount points.
func mountPoints() []string {
	var out []string
	for _, m := range scratch.Mounts() {
		out = append(out, m.Point)
	}
	return out
}

// unmount unmounts p, lazily when something (an editor, a shell) still has
// a file open there: the filesystem goes once the last user lets go.
func unmount(ctx context.Context, p string) error {
	if err := syscall.Unmount(p, 0); err == nil {
		return nil
	}
	if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmounting %s: %w", p, err)
	}
	return nil
}

// diskMountedAt reports whether the topmost mount on dir is a bcode disk,
// and its image.
func diskMountedAt(dir string) (string, bool) {
	src := ""
	for _, m := range scratch.Mounts() {
		if m.Point == dir {
			src = m.Source // later lines are mounted on top
		}
	}
	loop, ok := strings.CutPrefix(src, "/dev/loop")
	if !ok {
		return "", false
	}
	if _, err := strconv.Atoi(loop); err != nil {
		return "", false
	}
	b, err := os.ReadFile("/sys/block/loop" + loop + "/loop/backing_file")
	if err != nil {
		return "", false
	}
	img := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
	return img, filepath.Base(img) == diskImageName
}

// runTool runs a system tool (mkfs.ext4, mount, cp) with a bounded time.
// systemPath holds the system's own tools. The disk's tools (mkfs.ext4,
// mount, umount, cp) are looked up only there: a user's PATH may lack the
// sbin directories, and a tool run as root should not come from it.
const systemPath = "/usr/sbin:/usr/bin:/sbin:/bin"

// systemTool is name's path in systemPath.
func systemTool(name string) (string, error) {
	for _, dir := range filepath.SplitList(systemPath) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in %s: %w", name, systemPath, exec.ErrNotFound)
}

func runTool(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	path, err := systemTool(name)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=" + systemPath, "LC_ALL=C"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
