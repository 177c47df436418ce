//go:build !linux

package sandbox

import "os"

// beneathDir: no openat2 here; every read goes through os.Root.
type beneathDir struct{}

func openBeneath(string) *beneathDir { return nil }

func (b *beneathDir) close() {}

func (b *beneathDir) open(string) (*os.File, error) { return nil, errNoBeneath }

func (b *beneathDir) handle(string) (*os.File, error) { return nil, errNoBeneath }

func isEscapeErrno(error) bool { return false }
