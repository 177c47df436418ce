package secrets

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// CanaryPrefix starts every canary NewCanary makes. It is decoration, for a
// human reading a log: what Redact finds is the core after it.
const CanaryPrefix = "bcanary_"

// canaryAlphabet is RFC 4648's base32 alphabet in lower case: letters and
// digits only (so the core is one run of a value's skeleton, and nothing
// separates it from the prefix but "_"), one case (so upper-casing is
// undone by case folding without ambiguity), and no 0/o or 1/l pair.
const canaryAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// canaryCoreLen is the core's length: 26 characters of 5 bits, 130 bits.
const canaryCoreLen = 26

// canaryWindow is how many consecutive characters of a core Redact takes
// for the canary: 16 characters are 80 random bits, never in ordinary text
// by chance, so a core printed with up to ten characters cut off is still
// found. A core cut into pieces shorter than this is not. The other side
// of it: a character next to a cut core that continues it (the "g" of
// "starting" before a core whose "5g" an escape swallowed) is taken with
// it, since nothing tells it from the core's own.
const canaryWindow = minSkeleton

// NewCanary returns a fresh canary secret: CanaryPrefix and a random core
// of canaryCoreLen characters. Give it to NewScanner (or NewScannerKnown)
// and Redact finds it whole or its core alone, in any form the scanner
// knows (see NewScannerKnown).
func NewCanary() (string, error) {
	b := make([]byte, canaryCoreLen)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("secrets: canary: %w", err)
	}
	var s strings.Builder
	s.WriteString(CanaryPrefix)
	for _, c := range b {
		s.WriteByte(canaryAlphabet[c%32])
	}
	return s.String(), nil
}

// CanaryCore returns the random core of a canary NewCanary made.
func CanaryCore(canary string) (string, bool) {
	core, ok := strings.CutPrefix(canary, CanaryPrefix)
	if !ok || len(core) != canaryCoreLen || strings.Trim(core, canaryAlphabet) != "" {
		return "", false
	}
	return core, true
}
