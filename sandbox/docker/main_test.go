package docker

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary serve as the sandbox's GOCACHEPROG (as
// `bcode sandbox gocache` does in production): the Go-cache test mounts
// this very executable into the container.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-bcode-gocacheprog" {
		fs := flag.NewFlagSet("gocacheprog", flag.ExitOnError)
		lower := fs.String("lower", "", "")
		upper := fs.String("upper", "", "")
		_ = fs.Parse(os.Args[2:])
		if err := ServeGoCache(*lower, *upper, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
