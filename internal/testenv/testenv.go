// Package testenv is how a bcode test asks for a real component it needs
// (git, Go, pytest, Neovim, Node, a Docker engine): present, or the test
// skips with a message that says how to get it. Under BCODE_REQUIRE_ALL=1,
// as CI sets it, a missing component fails the test instead, so a green CI
// run means every test ran.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// RequireAllEnv is the variable that turns a missing component into a
// failure.
const RequireAllEnv = "BCODE_REQUIRE_ALL"

// SystemPython is where Debian's python3-pytest lives; the gate's tests
// run pytest through it.
const SystemPython = "/usr/bin/python3"

// RequireAll reports whether a missing component fails the test.
func RequireAll() bool { return os.Getenv(RequireAllEnv) == "1" }

// Missing ends t: a skip saying msg, or a failure under
// BCODE_REQUIRE_ALL=1. msg should say what is missing and how to get it.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if RequireAll() {
		t.Fatalf("%s (%s=1 makes this a failure)", msg, RequireAllEnv)
	}
	t.Skip(msg)
}

// Need ends t through Missing when ok is false.
func Need(t testing.TB, ok bool, msg string) {
	t.Helper()
	if !ok {
		Missing(t, msg)
	}
}

// Command returns the path of the named program on PATH, or ends t
// through Missing saying how to install it.
func Command(t testing.TB, name, how string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name+" is not on PATH: "+how)
	}
	return p
}

// Git needs git on PATH.
func Git(t testing.TB) string { t.Helper(); return Command(t, "git", "apt-get install git") }

// Go needs the go command on PATH.
func Go(t testing.TB) string {
	t.Helper()
	return Command(t, "go", "install Go from https://go.dev/dl")
}

// Node needs node on PATH.
func Node(t testing.TB) string {
	t.Helper()
	return Command(t, "node", "apt-get install nodejs npm")
}

// SystemPytest needs pytest importable by /usr/bin/python3, the
// interpreter the gate's tests name.
func SystemPytest(t testing.TB) string {
	t.Helper()
	Need(t, HaveSystemPytest(), SystemPython+" -m pytest is unavailable: apt-get install python3-pytest")
	return SystemPython
}

// HaveSystemPytest reports whether /usr/bin/python3 can run pytest, for
// tests that run their Go cases either way and only skip the Python ones.
func HaveSystemPytest() bool {
	return exec.Command(SystemPython, "-m", "pytest", "--version").Run() == nil
}

// Pytest needs an interpreter that can import pytest: python3 on PATH,
// else /usr/bin/python3. It returns that interpreter.
func Pytest(t testing.TB) string {
	t.Helper()
	return python(t, "import pytest", "pytest is not installed: apt-get install python3-pytest (or pip install pytest)")
}

// Python needs a python3 (PATH, else /usr/bin/python3) and returns it.
func Python(t testing.TB) string {
	t.Helper()
	return python(t, "import ast", "python3 is not installed: apt-get install python3")
}

func python(t testing.TB, probe, msg string) string {
	t.Helper()
	for _, py := range []string{"python3", SystemPython} {
		if exec.Command(py, "-c", probe).Run() == nil {
			return py
		}
	}
	Missing(t, msg)
	return ""
}
