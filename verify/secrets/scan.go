package secrets

import (
	"context"
	"strings"

	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

// match is one finding with its byte span in the scanned text.
type match struct {
	rule, description string
	secret            string
	start, end        int // byte offsets; -1 for a finding on the file's name
}

// chunkSize is the size of the pieces gitleaks sees. gitleaks runs a rule
// over its whole input as soon as one of the rule's keywords appears
// anywhere in it, so one "ghp_" in a megabyte costs every GitHub rule a
// pass over the megabyte; in pieces, only the pieces with the keyword pay.
const chunkSize = 16 << 10

// overlapLines is how many lines each piece reads past its end, so a match
// that runs onto the next line (`key =` then the value) is still whole.
const overlapLines = 2

// maxKeyBlock bounds how far a piece grows to keep a private key block whole.
const maxKeyBlock = 64 << 10

// scan runs the rules and the extra values over text. path may be empty; it
// lets path-specific rules apply. Every span it returns lies within text.
func (s *Scanner) scan(path, text string) []match {
	type key struct {
		rule       string
		start, end int
	}
	seen := map[key]bool{}
	var out []match
	add := func(m match) {
		k := key{m.rule, m.start, m.end}
		if !seen[k] {
			seen[k] = true
			out = append(out, m)
		}
	}

	if path != "" {
		// Rules on the file's name alone, once.
		//lint:ignore SA1019 detect.Fragment is the only type DetectContext takes in gitleaks v8
		for _, f := range s.detector.DetectContext(context.Background(), detect.Fragment{FilePath: path}) {
			if f.Secret == "" {
				add(match{rule: f.RuleID, description: f.Description, start: -1, end: -1})
			}
		}
	}
	secrets := map[string]match{}
	for _, c := range pieces(text) {
		piece := text[c.start:c.end]
		//lint:ignore SA1019 detect.Fragment is the only type DetectContext takes in gitleaks v8
		for _, f := range s.detector.DetectContext(context.Background(), detect.Fragment{Raw: piece, FilePath: path}) {
			if f.Secret == "" {
				continue // the name rules ran above
			}
			for _, m := range spans(piece, f) {
				m.start += c.start
				m.end += c.start
				add(m)
				if !isDecoded(f) {
					secrets[f.Secret] = m
				}
			}
		}
	}
	// A secret seen once is a secret everywhere, whatever surrounds its
	// other occurrences.
	for secret, m := range secrets {
		for _, at := range occurrences(text, secret) {
			m.start, m.end = at, at+len(secret)
			add(m)
		}
	}
	for _, e := range s.extras {
		desc := "a value bcode was told is secret"
		if e.how != "" {
			desc += " (" + e.how + "-encoded)"
		}
		for _, at := range occurrences(text, e.value) {
			add(match{rule: KnownSecretRule, description: desc, secret: e.value, start: at, end: at + len(e.value)})
		}
	}
	return out
}

// occurrences lists the offsets of every non-overlapping occurrence of sub.
func occurrences(text, sub string) []int {
	var out []int
	for i := 0; sub != ""; {
		j := strings.Index(text[i:], sub)
		if j < 0 {
			break
		}
		out = append(out, i+j)
		i += j + len(sub)
	}
	return out
}

// span is a byte range of the scanned text.
type span struct{ start, end int }

// pieces cuts text into pieces of about chunkSize at line ends, each read
// overlapLines past its end, and grown so a private key block that starts
// in it ends in it.
func pieces(text string) []span {
	var out []span
	for start := 0; start < len(text); {
		end := lineEnd(text, min(start+chunkSize, len(text)))
		if i := lastIndexFold(text[start:end], "-----begin"); i >= 0 {
			end = keyBlockEnd(text, start+i)
		}
		read := end
		for range overlapLines {
			read = lineEnd(text, read)
		}
		out = append(out, span{start, read})
		start = end
	}
	return out
}

// lineEnd returns the offset just past the newline at or after i, or the
// end of text.
func lineEnd(text string, i int) int {
	if i >= len(text) {
		return len(text)
	}
	if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(text)
}

// keyBlockEnd returns the end of the line holding the "-----END" after the
// "-----BEGIN" at begin, or maxKeyBlock further when there is none.
func keyBlockEnd(text string, begin int) int {
	limit := min(begin+maxKeyBlock, len(text))
	if i := indexFold(text[begin:limit], "-----end"); i >= 0 {
		return lineEnd(text, begin+i)
	}
	return lineEnd(text, limit)
}

// indexFold and lastIndexFold find an ASCII lower-case needle in text
// regardless of case, without copying text when the needle's first byte
// ('-') is absent.
func indexFold(text, lowerNeedle string) int {
	if !strings.Contains(text, lowerNeedle[:5]) {
		return -1
	}
	return strings.Index(strings.ToLower(text), lowerNeedle)
}

func lastIndexFold(text, lowerNeedle string) int {
	if !strings.Contains(text, lowerNeedle[:5]) {
		return -1
	}
	return strings.LastIndex(strings.ToLower(text), lowerNeedle)
}

// spans places a gitleaks finding in text: a plain finding at each
// occurrence of its secret, a finding in decoded content at the encoded span
// gitleaks reports.
func spans(text string, f report.Finding) []match {
	base := match{rule: f.RuleID, description: f.Description, secret: f.Secret}
	if !isDecoded(f) {
		var out []match
		for _, at := range occurrences(text, f.Secret) {
			m := base
			m.start, m.end = at, at+len(f.Secret)
			out = append(out, m)
		}
		if out != nil {
			return out
		}
	}
	start, end, ok := findingOffsets(text, f)
	if !ok {
		// Not placeable (a gitleaks change in how it counts columns):
		// take the whole line rather than leave the secret in.
		start, end = lineBounds(text, f.StartLine)
	}
	base.start, base.end = start, end
	return []match{base}
}
