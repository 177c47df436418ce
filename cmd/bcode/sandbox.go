package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/app"
)

func init() {
	register(command{
		name:    "sandbox",
		summary: "build the sandbox image offline (bcode sandbox build)",
		run:     cmdSandbox,
	})
}

func cmdSandbox(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "gocache" {
		return cmdSandboxGoCache(args[1:], stderr)
	}
	if len(args) == 0 || args[0] != "build" {
		fmt.Fprintln(stderr, "usage: bcode sandbox build [--image REF] [--state DIR]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	fs := flag.NewFlagSet("bcode sandbox build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var st stateFlags
	st.register(fs)
	ref := fs.String("image", "", "image reference to build (default: [sandbox] image of .bcode/config.toml, else "+config.DefaultSandboxImage+")")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bcode sandbox build [--image REF] [--repo DIR] [--state DIR]")
		fmt.Fprintln(stderr, "Builds the sandbox image without a registry: a minimal root filesystem (users, scratch")
		fmt.Fprintln(stderr, "mount points, no programs) imported into Docker; toolchains are mounted read-only at run time.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		errorf(stderr, "bcode sandbox build", format, a...)
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bcode sandbox build: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *ref == "" {
		*ref = repoConfig(st.repo).Sandbox.Image
	}
	if err := st.useLocal(eng); err != nil {
		return fail("the image could not be recorded: %v", err)
	}
	img, err := eng.BuildSandboxImage(ctx, *ref)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "built %s\n  image id  %s\n  rootfs    v%s, %d bytes\n  engine    Docker %s (API %s)\n  recorded  %s\n",
		img.Ref, img.ImageID, img.Rootfs, img.Size, img.Engine, img.APIVersion, img.Recorded)
	return 0
}

// cmdSandboxGoCache is `bcode sandbox gocache -lower DIR -upper DIR`: not
// for people, but for the go command inside a sandbox container, which
// runs it as GOCACHEPROG over stdin and stdout (app.ServeGoCache). The
// bcode binary is mounted read-only into the container for this.
func cmdSandboxGoCache(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode sandbox gocache", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lower := fs.String("lower", "", "the read-only seed build cache")
	upper := fs.String("upper", "", "the writable build cache (the container's tmpfs)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *upper == "" {
		fmt.Fprintln(stderr, "bcode sandbox gocache: -upper is required")
		return 2
	}
	if err := app.ServeGoCache(*lower, *upper, os.Stdin, os.Stdout); err != nil {
		errorf(stderr, "bcode sandbox gocache", "%v", err)
		return 1
	}
	return 0
}
