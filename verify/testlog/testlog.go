// Package testlog is how bcode reads the record its own reporter writes
// inside a test run (pytest's plugin, the vitest, jest and node reporters):
// each line signed with a key only that reporter holds.
//
// The record is written in the snapshot, where the code under test can
// write too. The reporter reads the key from the file KeyFileEnv names and
// removes it when it loads, before any file of the snapshot runs, so a line
// the tests (or the code they run) write cannot carry a MAC that holds.
package testlog

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/bcode-dev/bcode/verify"
)

// KeyFileEnv names the environment variable that gives the reporter the
// key file's path.
const KeyFileEnv = "BCODE_LOG_KEY_FILE"

// KeyBytes is the length of a run's key.
const KeyBytes = 32

// NewKey is a fresh key for one run.
func NewKey() ([]byte, error) {
	key := make([]byte, KeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("testlog: key: %w", err)
	}
	return key, nil
}

// Sign is one line as a reporter writes it: "<hex HMAC-SHA256> <body>\n".
func Sign(key, body []byte) []byte {
	line := hex.AppendEncode(nil, mac(key, body))
	line = append(line, ' ')
	line = append(line, body...)
	return append(line, '\n')
}

// Authentic keeps the lines of data whose MAC holds under key, as their
// bodies one per line, and counts the complete lines that do not: written
// by something other than the reporter. A last line without its newline
// is a write the run's end cut short, not a forgery, and is dropped.
func Authentic(data, key []byte) (log []byte, forged int) {
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		torn := i == len(lines)-1
		macHex, body, ok := bytes.Cut(line, []byte(" "))
		want, err := hex.DecodeString(string(macHex))
		if !ok || err != nil || len(want) != sha256.Size || !hmac.Equal(want, mac(key, body)) {
			if !torn {
				forged++
			}
			continue
		}
		log = append(log, body...)
		log = append(log, '\n')
	}
	return log, forged
}

// Forged says what n forged lines mean, for a report.
func Forged(n int) string {
	return fmt.Sprintf("%d line(s) of bcode's test log were not written by bcode's reporter", n)
}

func mac(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// MarkAltered makes res a failure whose detail says the run's report was
// altered (verify.ReportAlteredMarker, a report_altered finding), keeping
// what the run said after it.
func MarkAltered(res *verify.TestResult, why string) {
	detail := verify.ReportAlteredMarker + " " + why
	if res.Detail != "" {
		detail += "\n" + res.Detail
	}
	res.Outcome, res.Detail = verify.Fail, detail
}
