package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bcode-dev/bcode/engine/app"
	"github.com/bcode-dev/bcode/engine/ledger"
	"github.com/bcode-dev/bcode/sandbox/docker"
)

func init() {
	register(command{
		name:    "sandbox",
		summary: "build the sandbox image offline (bcode sandbox build)",
		run:     cmdSandbox,
	})
}

// sandboxMigrations is the ledger's "sandbox" set: the images bcode built,
// so doctor can tell the image it runs from the one it made.
var sandboxMigrations = []string{
	`CREATE TABLE sandbox_images (
		ref         TEXT NOT NULL,
		image_id    TEXT NOT NULL,
		rootfs      TEXT NOT NULL,
		engine      TEXT NOT NULL,
		api_version TEXT NOT NULL,
		built_at    TEXT NOT NULL,
		PRIMARY KEY (ref, image_id)
	) STRICT`,
}

// sandboxImageRecord is one row of sandbox_images.
type sandboxImageRecord struct {
	Ref, ImageID, Rootfs, Engine, APIVersion string
	BuiltAt                                  time.Time
}

func recordSandboxImage(ctx context.Context, led *ledger.Ledger, rec sandboxImageRecord) error {
	return led.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sandbox_images (ref, image_id, rootfs, engine, api_version, built_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (ref, image_id) DO UPDATE SET built_at = excluded.built_at, engine = excluded.engine, api_version = excluded.api_version`,
			rec.Ref, rec.ImageID, rec.Rootfs, rec.Engine, rec.APIVersion, rec.BuiltAt.UTC().Format(time.RFC3339Nano))
		return err
	})
}

// lastSandboxImage is the newest image bcode built under ref (ok=false:
// none recorded).
func lastSandboxImage(ctx context.Context, led *ledger.Ledger, ref string) (rec sandboxImageRecord, ok bool, err error) {
	err = led.Read(ctx, func(tx *sql.Tx) error {
		var built string
		e := tx.QueryRowContext(ctx, `SELECT ref, image_id, rootfs, engine, api_version, built_at FROM sandbox_images
			WHERE ref = ? ORDER BY built_at DESC LIMIT 1`, ref).Scan(&rec.Ref, &rec.ImageID, &rec.Rootfs, &rec.Engine, &rec.APIVersion, &built)
		if errors.Is(e, sql.ErrNoRows) {
			return nil
		}
		if e != nil {
			return e
		}
		ok = true
		rec.BuiltAt, e = time.Parse(time.RFC3339Nano, built)
		return e
	})
	return rec, ok, err
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
	ref := fs.String("image", "", "image reference to build (default: [sandbox] image of .bcode/config.toml, else "+docker.DefaultImage+")")
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
		fmt.Fprintf(stderr, "bcode sandbox build: "+format+"\n", a...)
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bcode sandbox build: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *ref == "" {
		*ref = repoConfig(st.repo).Sandbox.Image
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	e, err := docker.Connect(cctx)
	cancel()
	if err != nil {
		return fail("%v", err)
	}
	defer e.Close()
	v, err := e.Version(ctx)
	if err != nil {
		return fail("%v", err)
	}
	img, err := e.BuildImage(ctx, *ref)
	if err != nil {
		return fail("%v", err)
	}
	led, err := st.openLedger(ctx, ledger.WithMigrations("sandbox", sandboxMigrations))
	if err != nil {
		return fail("the image is built (%s %s) but could not be recorded: %v", img.Ref, img.ID, err)
	}
	defer led.Close()
	if err := recordSandboxImage(ctx, led, sandboxImageRecord{
		Ref: img.Ref, ImageID: img.ID, Rootfs: img.Rootfs, Engine: v.Engine, APIVersion: v.Negotiated, BuiltAt: time.Now(),
	}); err != nil {
		return fail("the image is built (%s %s) but could not be recorded: %v", img.Ref, img.ID, err)
	}
	fmt.Fprintf(stdout, "built %s\n  image id  %s\n  rootfs    v%s, %d bytes\n  engine    Docker %s (API %s)\n  recorded  %s\n",
		img.Ref, img.ID, img.Rootfs, img.Size, v.Engine, v.Negotiated, led.Path())
	return 0
}

// cmdSandboxGoCache is `bcode sandbox gocache -lower DIR -upper DIR`: not
// for people, but for the go command inside a sandbox container, which
// runs it as GOCACHEPROG over stdin and stdout (docker.ServeGoCache). The
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
	if err := docker.ServeGoCache(*lower, *upper, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(stderr, "bcode sandbox gocache: %v\n", err)
		return 1
	}
	return 0
}
