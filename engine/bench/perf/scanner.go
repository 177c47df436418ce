package perf

import (
	"sync"

	"github.com/bcode-dev/bcode/verify/secrets"
)

// benchScanner is the bench's one secret scanner, built once per process
// as bcode builds its own (check.Run requires one). Its rules are compiled
// into the binary, so failing to build it is a broken build.
var benchScanner = sync.OnceValue(func() *secrets.Scanner {
	s, err := secrets.NewScanner()
	if err != nil {
		panic("the secret rules do not compile: " + err.Error())
	}
	return s
})
