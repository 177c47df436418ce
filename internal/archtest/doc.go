// Package archtest holds the tests that keep bcode's architecture as drawn
// in docs/architecture.md: which package may import which. They read the
// real import graph with `go list`, in the style of tailscale's deptest, so
// a wrong import fails CI instead of quietly becoming load-bearing.
package archtest
