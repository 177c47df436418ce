package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
)

// SandboxUID and SandboxGID are the user commands run as when bcode itself
// runs as root (distroless's "nonroot" numbers). A non-root bcode runs its
// containers as its own uid instead; see Config.User.
const (
	SandboxUID = 65532
	SandboxGID = 65532
	// Home is the sandbox user's home: a tmpfs owned by that user.
	Home = "/home/sandbox"
)

// rootfsVersion names the layout RootFS writes; it is a label on the image
// so a later bcode can tell an image it must rebuild.
const rootfsVersion = "1"

// usrDirs are the top-level directories a merged-/usr system links into
// /usr. The image mirrors the host: a link where the host has one, else a
// mount point that HostToolchains fills with the host's directory. /sbin is
// not among them: it stays a real, empty directory of the image because
// Docker mounts its init at /sbin/docker-init, which through a link would
// land in the read-only /usr mount and fail. /usr/sbin is on PATH instead.
var usrDirs = []string{"bin", "lib", "lib32", "lib64", "libx32"}

// RootFS writes the image's root filesystem as a tar stream: no binaries at
// all, only the skeleton the read-only toolchain mounts need (/usr is a
// mount point), the users, and scratch mount points. uid and gid are the
// host user bcode runs as; when they are not root they get a passwd entry
// too, so tools that look their user up (git, Python's getpass) work.
func RootFS(w io.Writer, uid, gid int) error {
	tw := tar.NewWriter(w)
	// A fixed time keeps the layer's content, and so its diff ID, stable.
	mtime := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: owner, Gid: owner, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name, body string) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.WriteString(tw, body)
		return err
	}
	link := func(name, target string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: mtime, Format: tar.FormatPAX})
	}
	passwd := "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
		"sandbox:x:" + strconv.Itoa(SandboxUID) + ":" + strconv.Itoa(SandboxGID) + ":bcode sandbox:" + Home + ":/bin/sh\n"
	group := "root:x:0:\nsandbox:x:" + strconv.Itoa(SandboxGID) + ":\n"
	if uid > 0 && uid != SandboxUID {
		passwd += "bcode:x:" + strconv.Itoa(uid) + ":" + strconv.Itoa(gid) + ":bcode sandbox (host uid):" + Home + ":/bin/sh\n"
		if gid > 0 && gid != SandboxGID {
			group += "bcode:x:" + strconv.Itoa(gid) + ":\n"
		}
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error { return file("etc/passwd", passwd) },
		func() error { return file("etc/group", group) },
		func() error { return file("etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n") },
		func() error { return file("etc/bcode-sandbox", "rootfs "+rootfsVersion+"\n") },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/sandbox", 0o700, SandboxUID) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("opt", 0o755, 0) },
		func() error { return dir("proc", 0o555, 0) },
		func() error { return dir("sys", 0o555, 0) },
		func() error { return dir("dev", 0o755, 0) },
		func() error { return dir("run", 0o755, 0) },
		func() error { return dir("var", 0o755, 0) },
		func() error { return dir("var/tmp", 0o1777, 0) },
		func() error { return dir("sbin", 0o755, 0) },
	}
	for _, d := range usrDirs {
		if target, ok := hostUsrLink(d); ok {
			steps = append(steps, func() error { return link(d, target) })
		}
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("writing the sandbox rootfs: %w", err)
		}
	}
	return tw.Close()
}

// hostUsrLink reports whether the host's /name is a symbolic link into
// /usr (merged /usr), and its target.
func hostUsrLink(name string) (string, bool) {
	t, err := os.Readlink("/" + name)
	if err != nil {
		return "", false
	}
	clean := filepath.Clean(filepath.Join("/", t))
	if !strings.HasPrefix(clean, "/usr/") {
		return "", false
	}
	return t, true
}

// Image is a built sandbox image.
type Image struct {
	Ref     string    // the tag it was built or looked up as
	ID      string    // "sha256:…", the digest of its configuration
	Created time.Time // when the engine created it
	Size    int64
	Rootfs  string // the rootfs layout version it was built with
}

// BuildImage makes the sandbox image without any registry: it writes RootFS
// for the calling user and `docker import`s it under ref (DefaultImage when
// empty). Importing the same rootfs again replaces the tag.
func (e *Engine) BuildImage(ctx context.Context, ref string) (Image, error) {
	if ref == "" {
		ref = DefaultImage
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(RootFS(pw, os.Getuid(), os.Getgid())) }()
	defer pr.Close()
	changes := []string{
		"USER " + strconv.Itoa(SandboxUID) + ":" + strconv.Itoa(SandboxGID),
		"WORKDIR " + Home,
		"ENV PATH=" + containerPath("", ""),
		"LABEL " + labelSandbox + ".rootfs=" + rootfsVersion,
	}
	rc, err := e.cli.ImageImport(ctx, image.ImportSource{Source: pr, SourceName: "-"}, ref,
		image.ImportOptions{Message: "bcode sandbox build", Changes: changes})
	if err != nil {
		return Image{}, fmt.Errorf("importing the sandbox image: %w", e.wrap(ctx, err))
	}
	defer rc.Close()
	// The engine streams JSON progress; an error arrives inside it.
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return Image{}, fmt.Errorf("importing the sandbox image: reading the engine's answer: %w", err)
		}
		if msg.Error != "" {
			return Image{}, fmt.Errorf("importing the sandbox image: %s", msg.Error)
		}
	}
	return e.Image(ctx, ref)
}

// Image looks the sandbox image up; ErrNoImage when it is not there.
func (e *Engine) Image(ctx context.Context, ref string) (Image, error) {
	if ref == "" {
		ref = DefaultImage
	}
	in, err := e.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Image{}, fmt.Errorf("%s: %w", ref, ErrNoImage)
		}
		return Image{}, e.wrap(ctx, err)
	}
	img := Image{Ref: ref, ID: in.ID, Size: in.Size}
	if t, err := time.Parse(time.RFC3339Nano, in.Created); err == nil {
		img.Created = t
	}
	if in.Config != nil {
		img.Rootfs = in.Config.Labels[labelSandbox+".rootfs"]
	}
	return img, nil
}

// RemoveImage deletes the image (tests use it to leave no trace).
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	_, err := e.cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return e.wrap(ctx, err)
	}
	return nil
}
