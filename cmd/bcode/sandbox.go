package main

import (
	"context"
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

var sandboxGroup = commandGroup{
	name:   "bcode sandbox",
	about:  "  build [--image REF]   build the sandbox image offline (no registry) and record it",
	subs:   map[string]subcommand{"build": cmdSandboxBuild, "gocache": cmdSandboxGoCache},
	hidden: map[string]bool{"gocache": true},
}

func cmdSandbox(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	return sandboxGroup.run(ctx, eng, args, stdout, stderr)
}

func cmdSandboxBuild(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode sandbox build [--image REF] [--repo DIR] [--state DIR]", stdout, stderr)
	fs.about = "Builds the sandbox image without a registry: a minimal root filesystem (users, scratch\n" +
		"mount points, no programs) imported into Docker; toolchains are mounted read-only at run time."
	var st stateFlags
	st.register(fs.FlagSet)
	ref := fs.String("image", "", "the image reference `REF` to build (default: [sandbox] image of .bcode/config.toml, else "+config.DefaultSandboxImage+")")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		errorf(stderr, "bcode sandbox build", format, a...)
		return 1
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

// cmdSandboxGoCache is bcode sandbox gocache --lower DIR --upper DIR: not
// for people, but for the go command inside a sandbox container, which
// runs it as GOCACHEPROG over stdin and stdout (app.ServeGoCache). The
// bcode binary is mounted read-only into the container for this.
func cmdSandboxGoCache(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode sandbox gocache --upper DIR [--lower DIR]", stdout, stderr)
	lower := fs.String("lower", "", "the read-only seed build cache `DIR`")
	upper := fs.String("upper", "", "the writable build cache `DIR` (the container's tmpfs)")
	if code, ok := fs.noArgs(args); !ok {
		return code
	}
	if *upper == "" {
		return fs.usageErr("--upper is required")
	}
	if err := app.ServeGoCache(*lower, *upper, os.Stdin, os.Stdout); err != nil {
		errorf(stderr, "bcode sandbox gocache", "%v", err)
		return 1
	}
	return 0
}
