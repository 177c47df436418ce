//go:build !linux

package docker

import (
	"context"
	"errors"
)

// disk: loop-mounted filesystems are Linux's; elsewhere the limit is not
// enforced (see docs/sandbox.md).
type disk struct{}

func mountDisk(context.Context, string, int64, bool) (*disk, error) {
	return nil, errors.Join(ErrDiskLimit, errors.New("needs Linux"))
}

func (*disk) release(context.Context) error { return nil }

// ReleaseStaleDisks: no disks are mounted here.
func ReleaseStaleDisks(context.Context) (int, error) { return 0, nil }
