package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// imageSet names the sandbox images' migrations in schema_migrations. The
// name is in every ledger that ever recorded an image: never change it.
const imageSet = "sandbox"

// imageMigrations create the table of the sandbox images bcode built, so
// doctor can tell the image it runs from the one it made. Never edit a step
// that has shipped; append a new one.
var imageMigrations = []string{
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

// WithSandboxImages adds the table of built sandbox images to the ledger
// (its own migration set, "sandbox"), for RecordSandboxImage and
// LastSandboxImage.
func WithSandboxImages() Option { return WithMigrations(imageSet, imageMigrations) }

// SandboxImage is a sandbox image bcode built.
type SandboxImage struct {
	Ref        string // the tag
	ImageID    string
	Rootfs     string // the root filesystem's version
	Engine     string // the Docker engine's version
	APIVersion string // the negotiated API version
	BuiltAt    time.Time
}

// RecordSandboxImage records a built image; building the same image under
// the same tag again updates its time and engine.
func (l *Ledger) RecordSandboxImage(ctx context.Context, img SandboxImage) error {
	if err := l.needSet(imageSet, "WithSandboxImages"); err != nil {
		return err
	}
	return l.Write(ctx, func(tx *sql.Tx) error {
		// RFC 3339 with nanoseconds, as every row so far: ORDER BY built_at
		// compares these strings.
		_, err := tx.ExecContext(ctx, `INSERT INTO sandbox_images (ref, image_id, rootfs, engine, api_version, built_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (ref, image_id) DO UPDATE SET built_at = excluded.built_at, engine = excluded.engine, api_version = excluded.api_version`,
			img.Ref, img.ImageID, img.Rootfs, img.Engine, img.APIVersion, img.BuiltAt.UTC().Format(time.RFC3339Nano))
		return err
	})
}

// LastSandboxImage is the newest image bcode built under ref (ok=false:
// none recorded).
func (l *Ledger) LastSandboxImage(ctx context.Context, ref string) (img SandboxImage, ok bool, err error) {
	if err := l.needSet(imageSet, "WithSandboxImages"); err != nil {
		return SandboxImage{}, false, err
	}
	err = l.Read(ctx, func(tx *sql.Tx) error {
		var built string
		e := tx.QueryRowContext(ctx, `SELECT ref, image_id, rootfs, engine, api_version, built_at FROM sandbox_images
			WHERE ref = ? ORDER BY built_at DESC LIMIT 1`, ref).Scan(&img.Ref, &img.ImageID, &img.Rootfs, &img.Engine, &img.APIVersion, &built)
		if errors.Is(e, sql.ErrNoRows) {
			return nil
		}
		if e != nil {
			return e
		}
		ok = true
		img.BuiltAt, e = time.Parse(time.RFC3339Nano, built)
		return e
	})
	return img, ok, err
}
