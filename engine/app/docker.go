package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/bcode-dev/bcode/sandbox/docker"
)

// ErrNoSandboxImage: the sandbox image has not been built.
var ErrNoSandboxImage = docker.ErrNoImage

// DockerVersion is what the Docker engine says of itself.
type DockerVersion struct {
	Engine        string // the engine's version ("20.10.24+dfsg1")
	APIVersion    string // the engine's newest API ("1.41")
	MinAPIVersion string // the engine's oldest API
	Negotiated    string // the API version bcode speaks to it
	OS, Arch      string
	Seccomp       bool // the engine applies a seccomp profile by default
}

// DockerImage is a sandbox image as the Docker engine has it.
type DockerImage struct {
	Ref     string // the tag it was built or looked up as
	ID      string // "sha256:…", the digest of its configuration
	Created time.Time
	Size    int64
	Rootfs  string // the root filesystem's version bcode built it with; "": not bcode's
}

// SandboxProbe is what bcode doctor learns of the Docker sandbox, one
// question at a time; each error says why its answer is missing.
type SandboxProbe struct {
	// Unreachable: Docker could not be reached; nothing else was asked.
	Unreachable error
	Version     DockerVersion
	VersionErr  error
	// Reaped containers of bcode processes that are gone.
	Reaped  int
	ReapErr error
	// Image is the sandbox image under the probed tag; ImageErr is
	// ErrNoSandboxImage when it is not built.
	Image    DockerImage
	ImageErr error
}

// ProbeSandbox asks the Docker engine who it is and for the sandbox image
// ref, and removes the containers killed bcode processes left (what
// bcode doctor checks), all within ctx.
func ProbeSandbox(ctx context.Context, ref string) SandboxProbe {
	e, err := docker.Connect(ctx)
	if err != nil {
		return SandboxProbe{Unreachable: err}
	}
	defer e.Close()
	var p SandboxProbe
	var v docker.Version
	v, p.VersionErr = e.Version(ctx)
	p.Version = dockerVersion(v)
	p.Reaped, p.ReapErr = e.ReapOrphans(ctx, "")
	var img docker.Image
	img, p.ImageErr = e.Image(ctx, ref)
	p.Image = dockerImage(img)
	return p
}

// sandboxConnectTimeout bounds how long BuildSandboxImage waits for the
// Docker engine to answer.
const sandboxConnectTimeout = 10 * time.Second

// BuiltSandboxImage is an image BuildSandboxImage built, as recorded.
type BuiltSandboxImage struct {
	SandboxImage
	Size int64
	// Recorded is the ledger file that records it.
	Recorded string
}

// BuildSandboxImage builds the sandbox image under ref without a registry
// (a minimal root filesystem imported into Docker; toolchains are mounted
// at run time) and records it in the state directory's ledger, where
// bcode doctor finds which image bcode built.
func (e *Engine) BuildSandboxImage(ctx context.Context, ref string) (*BuiltSandboxImage, error) {
	cctx, cancel := context.WithTimeout(ctx, sandboxConnectTimeout)
	d, err := docker.Connect(cctx)
	cancel()
	if err != nil {
		return nil, err
	}
	defer d.Close()
	v, err := d.Version(ctx)
	if err != nil {
		return nil, err
	}
	img, err := d.BuildImage(ctx, ref)
	if err != nil {
		return nil, err
	}
	b := &BuiltSandboxImage{Size: img.Size, SandboxImage: SandboxImage{
		Ref: img.Ref, ImageID: img.ID, Rootfs: img.Rootfs, Engine: v.Engine, APIVersion: v.Negotiated, BuiltAt: time.Now(),
	}}
	if b.Recorded, err = e.RecordSandboxImage(ctx, b.SandboxImage); err != nil {
		return nil, fmt.Errorf("the image is built (%s %s) but could not be recorded: %w", img.Ref, img.ID, err)
	}
	return b, nil
}

// ServeGoCache is the GOCACHEPROG of the go command inside a sandbox
// container (bcode sandbox gocache): build outputs read from lower (the
// host's seeded cache, read-only) and upper, written to upper (the
// container's tmpfs) only; the protocol's JSON lines on in and out.
func ServeGoCache(lower, upper string, in io.Reader, out io.Writer) error {
	return docker.ServeGoCache(lower, upper, in, out)
}

func dockerVersion(v docker.Version) DockerVersion {
	return DockerVersion{Engine: v.Engine, APIVersion: v.APIVersion, MinAPIVersion: v.MinAPIVersion, Negotiated: v.Negotiated, OS: v.OS, Arch: v.Arch, Seccomp: v.Seccomp}
}

func dockerImage(img docker.Image) DockerImage {
	return DockerImage{Ref: img.Ref, ID: img.ID, Created: img.Created, Size: img.Size, Rootfs: img.Rootfs}
}
