//go:build race

package server_test

// raceEnabled: the race detector reserves shadow memory a test's own
// memory cap cannot hold.
const raceEnabled = true
