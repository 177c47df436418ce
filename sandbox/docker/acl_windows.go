package docker

import "errors"

// GrantWrite needs POSIX ACLs, which Windows hosts do not have; a Windows
// host runs the sandbox as the engine's own user instead.
func GrantWrite(dir string, uid int) error {
	return errors.New("granting the sandbox user write access needs POSIX ACLs: run the Docker sandbox from a Linux or macOS host")
}
