//go:build !unix

package ledger

// signalZeroAlive cannot tell without /proc or signals, so it says alive:
// the lease then goes stale by its TTL, which is always safe.
func signalZeroAlive(int) bool { return true }
