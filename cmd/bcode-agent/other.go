//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "bcode-agent runs only inside bcode's Linux sandbox container; build it with GOOS=linux CGO_ENABLED=0")
	os.Exit(2)
}
