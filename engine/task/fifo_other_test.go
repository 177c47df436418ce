//go:build !unix

package task_test

import "errors"

func mkfifo(string) error { return errors.New("no fifos on this system") }
