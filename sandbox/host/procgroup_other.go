//go:build !unix

package host

import (
	"io/fs"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func start(cmd *exec.Cmd) (func(), error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {}, nil
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func ownedByMe(fs.FileInfo) bool { return true }
