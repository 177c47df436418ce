// Package secrets finds secrets in text, in a change's added lines and in a
// repository's history, and redacts them from text that leaves the host.
//
// Detection is gitleaks' (github.com/zricethezav/gitleaks/v8) embedded
// default rule set used as a library, plus literal values the caller knows
// to be secret (per-task canaries, secret values from the environment). The
// rules are built only from gitleaks' own embedded defaults: nothing in the
// repository under test (.gitleaks.toml, .gitleaksignore, baselines,
// `gitleaks:allow` comments) can switch a rule off, since that repository is
// exactly what an agent or a change controls.
package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	glconfig "github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/report"
)

// KnownSecretRule is the rule id of findings of the literal values given to
// NewScanner.
const KnownSecretRule = "known-secret"

// MinExtraLen is the shortest literal value NewScanner accepts: shorter
// values ("true", a port number) would redact ordinary text everywhere.
const MinExtraLen = 8

// maxDecodeDepth is how many nested encodings (base64, hex, percent,
// unicode escapes) gitleaks peels to find an encoded secret; the gitleaks
// command line's default.
const maxDecodeDepth = 5

// Finding is one secret found in text.
type Finding struct {
	RuleID      string
	Description string
	Path        string
	// Line is 1-based; 0 for a finding about the file as a whole (a
	// key store detected by its name).
	Line int
	// Secret is the matched value. Never print or log it; show Redacted.
	Secret string
	// Redacted is a safe stand-in for Secret: at most its first four
	// characters for long values, and its length.
	Redacted string
	// Commit is the commit that added the line, for history scans.
	Commit string
}

// Scanner finds and redacts secrets. It is safe for concurrent use; build
// one and share it, since the rule set behind it is compiled once per
// process (see RulesBuildTime).
type Scanner struct {
	detector *detect.Detector
	// extras are literal values to find, with the encodings under which
	// they are also found, longest first so the longest match wins.
	extras []extraValue
	// known are the normal forms of the known values and host paths that
	// Redact finds however they are written (see normalize.go).
	known forms
}

// Known are the values a scanner finds besides gitleaks' rules.
type Known struct {
	// Values are literal secrets (per-task canaries, secret values from
	// the environment); values shorter than MinExtraLen bytes are ignored.
	Values []string
	// Paths are host paths the model must not learn. Redact finds them
	// normalised or encoded (labelled HostPathRule); replacing their plain
	// occurrences with a placeholder is the caller's part.
	Paths []string
}

type extraValue struct {
	value string
	how   string // "", "base64", "hex": how the value was encoded
}

// rules holds gitleaks' detector, built at most once per process: compiling
// the ~220 default rules takes about a tenth of a second.
var rules = sync.OnceValues(buildDetector)

// rulesBuilt is how long the one build took.
var rulesBuilt time.Duration

// RulesBuildTime reports how long compiling gitleaks' rules took (compiling
// them now if no Scanner has been built yet), or zero if compiling failed.
func RulesBuildTime() time.Duration {
	if _, err := rules(); err != nil {
		return 0
	}
	return rulesBuilt
}

// exemptPathsDropped are entries of gitleaks' default global path allowlist
// bcode removes: they exempt any file whose name merely contains
// "gitleaks.toml", which a change can choose at will.
var exemptPathsDropped = []string{`gitleaks\.toml`}

func buildDetector() (*detect.Detector, error) {
	start := time.Now()
	// gitleaks logs through a global zerolog logger, at trace level with the
	// secrets themselves; keep all of it out of bcode's output.
	logging.Logger = logging.Logger.Level(zerolog.Disabled)

	// A private viper instance: the global one may hold another config, and
	// only the embedded default text is ever read.
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(glconfig.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("secrets: reading gitleaks' default rules: %w", err)
	}
	var vc glconfig.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("secrets: reading gitleaks' default rules: %w", err)
	}
	// The default never extends another file; make sure no path or URL is
	// ever followed.
	vc.Extend = glconfig.Extend{}
	// gitleaks' default rules still write their global allowlist as the
	// deprecated [allowlist] table, so the deprecated field is where it is.
	//lint:ignore SA1019 the embedded default config fills only this field
	if global := vc.AllowList; global != nil {
		global.Paths = slices.DeleteFunc(global.Paths, func(p string) bool {
			return slices.Contains(exemptPathsDropped, p)
		})
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("secrets: compiling gitleaks' default rules: %w", err)
	}
	// Translate records the global viper's config file as the config's own
	// path, which the detector then skips; bcode has no such file.
	cfg.Path = ""

	d := detect.NewDetector(cfg)
	d.MaxDecodeDepth = maxDecodeDepth
	// A `gitleaks:allow` comment is text the scanned change controls.
	d.IgnoreGitleaksAllow = true
	d.Redact = 0
	rulesBuilt = time.Since(start)
	return d, nil
}

// NewScanner returns a scanner with gitleaks' default rules that also finds
// each of extra: literal values known to be secret (per-task canaries,
// secret values from the environment). Values shorter than MinExtraLen bytes
// are ignored. Each value is also found in standard and URL-safe base64 and
// in hex, the encodings a value most often passes through unchanged.
func NewScanner(extra ...string) (*Scanner, error) {
	return NewScannerKnown(Known{Values: extra})
}

// NewScannerKnown returns a scanner with gitleaks' default rules that also
// finds k's values and paths. Redact finds them however they are written:
// with format characters between their characters, case-changed, spaced
// out or folded across lines, reversed, in fullwidth or other compatibility
// forms, in base64 at any offset or in hex; a long value's random core
// (see NewCanary) also on its own.
func NewScannerKnown(k Known) (*Scanner, error) {
	d, err := rules()
	if err != nil {
		return nil, err
	}
	s := &Scanner{detector: d}
	for _, v := range k.Values {
		if len(v) >= MinExtraLen {
			s.known.addValue(v, KnownSecretRule)
		}
	}
	for _, p := range k.Paths {
		s.known.addPath(p)
	}
	extra := k.Values
	seen := map[string]bool{}
	add := func(v, how string) {
		if len(v) >= MinExtraLen && !seen[v] {
			seen[v] = true
			s.extras = append(s.extras, extraValue{value: v, how: how})
		}
	}
	for _, v := range extra {
		if len(v) < MinExtraLen {
			continue
		}
		add(v, "")
		add(strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(v)), "="), "base64")
		add(strings.TrimRight(base64.URLEncoding.EncodeToString([]byte(v)), "="), "base64")
		add(hex.EncodeToString([]byte(v)), "hex")
		add(strings.ToUpper(hex.EncodeToString([]byte(v))), "hex")
	}
	slices.SortStableFunc(s.extras, func(a, b extraValue) int { return len(b.value) - len(a.value) })
	return s, nil
}

func isDecoded(f report.Finding) bool {
	for _, t := range f.Tags {
		if strings.HasPrefix(t, "decoded:") {
			return true
		}
	}
	return false
}

// findingOffsets turns gitleaks' 0-based line and column numbers into byte
// offsets. gitleaks counts a column from the newline before the line (so
// columns on every line but the first are one higher than 1-based) and ends
// are inclusive; see detect/location.go.
func findingOffsets(text string, f report.Finding) (start, end int, ok bool) {
	offset := func(line, col, adjustFirst, adjustRest int) int {
		ls, _ := lineBounds(text, line)
		if line == 0 {
			return ls + col + adjustFirst
		}
		return ls + col + adjustRest
	}
	start = offset(f.StartLine, f.StartColumn, -1, -2)
	end = offset(f.EndLine, f.EndColumn, 0, -1)
	if start < 0 || end > len(text) || start >= end {
		return 0, 0, false
	}
	return start, end, true
}

// lineBounds returns the byte span of 0-based line n (without its newline);
// an empty span at the end of text past the last line.
func lineBounds(text string, n int) (start, end int) {
	for ; n > 0; n-- {
		i := strings.IndexByte(text[start:], '\n')
		if i < 0 {
			return len(text), len(text)
		}
		start += i + 1
	}
	end = strings.IndexByte(text[start:], '\n')
	if end < 0 {
		return start, len(text)
	}
	return start, start + end
}

// ScanText reports the secrets in text, a file's content (path may be
// empty; it lets path-specific rules apply). Invisible characters are removed
// first, so a secret split by zero-width spaces is still found. Findings are
// ordered by line, then rule.
func (s *Scanner) ScanText(path string, text []byte) []Finding {
	nv := nfkcView(string(text))
	return s.findings(path, string(nv.text), 0, "")
}

// findings scans text and reports each distinct secret once per line,
// numbering lines from firstLine+1.
func (s *Scanner) findings(path, text string, firstLine int, commit string) []Finding {
	type key struct {
		line         int
		rule, secret string
	}
	seen := map[key]bool{}
	var out []Finding
	var newlines []int // offsets of '\n', computed on first need
	for _, m := range s.scan(path, text) {
		line := 0
		if m.start >= 0 {
			if newlines == nil {
				newlines = occurrences(text, "\n")
			}
			n, _ := slices.BinarySearch(newlines, m.start)
			line = firstLine + 1 + n
		}
		k := key{line, m.rule, m.secret}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Finding{
			RuleID:      m.rule,
			Description: m.description,
			Path:        path,
			Line:        line,
			Secret:      m.secret,
			Redacted:    redactedForm(m.secret),
			Commit:      commit,
		})
	}
	slices.SortFunc(out, func(a, b Finding) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.RuleID, b.RuleID)
	})
	return out
}

// redactedForm shows enough of a secret to recognise its kind (AKIA…,
// ghp_…) and nothing a reader could use: four characters of a value of at
// least sixteen, never more than a quarter of it.
func redactedForm(secret string) string {
	if secret == "" {
		return ""
	}
	n := len([]rune(secret))
	if n >= 16 {
		return fmt.Sprintf("%s…(%d chars)", string([]rune(secret)[:4]), n)
	}
	return fmt.Sprintf("…(%d chars)", n)
}

// Redact replaces every secret in text with "[REDACTED:<rule>]" and
// removes format characters (see StripInvisible). It finds gitleaks' rules
// on the text with format characters and terminal escapes dropped and NFKC
// applied, and the scanner's known values and paths (and any secret a rule
// found, elsewhere in the same text) however they are written; see
// NewScannerKnown. Each match is mapped back to the bytes of text that
// produced it, so only those are replaced. It returns the redacted text and
// the number of changes: secrets replaced plus format characters removed.
func (s *Scanner) Redact(text string) (string, int) {
	return replaceSpans(text, s.matches(text))
}

// Span is a stretch of a text that Redact would replace.
type Span struct {
	Start, End int
	Rule       string
	// Secret is the value a gitleaks rule matched ("" for a known value
	// or host path, which the caller knows already). Never print it.
	Secret string
}

// Find reports the spans of text that Redact would replace (overlapping
// ones not merged), for a caller that replaces them itself: the gateway,
// which scans a whole request at once and maps each span back to the
// string of the request it falls in.
func (s *Scanner) Find(text string) []Span {
	ms := s.matches(text)
	out := make([]Span, 0, len(ms))
	for _, m := range ms {
		sp := Span{Start: m.start, End: m.end, Rule: m.rule}
		if m.rule != KnownSecretRule {
			sp.Secret = m.secret
		}
		out = append(out, sp)
	}
	return out
}

// matches are the spans of text Redact replaces.
func (s *Scanner) matches(text string) []match {
	nv := nfkcView(text)
	scanned := text
	if !nv.ident {
		scanned = string(nv.text)
	}
	var matches []match
	var found forms
	for _, m := range s.scan("", scanned) {
		if m.start < 0 {
			continue
		}
		m.start, m.end = nv.source(m.start, m.end)
		matches = append(matches, m)
		if m.rule != KnownSecretRule && m.secret != "" {
			found.addValue(m.secret, m.rule)
		}
	}
	sets := []*forms{&s.known, &found}
	if !s.known.empty() || !found.empty() {
		matches = findKnown(&nv, sets, 0, matches)
	}
	return matches
}

// replaceSpans returns text with each of matches' spans (merged where they
// overlap) replaced by its label and format characters removed, and the
// number of changes.
func replaceSpans(text string, matches []match) (string, int) {
	stripped := countFormat(text)
	if len(matches) == 0 {
		if stripped == 0 {
			return text, 0
		}
		out, n := StripInvisible(text)
		return out, n
	}
	// Longest first at the same start, so merging keeps the widest label.
	slices.SortFunc(matches, func(a, b match) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return (b.end - b.start) - (a.end - a.start)
	})
	var b strings.Builder
	b.Grow(len(text))
	pos, count := 0, 0
	for i := 0; i < len(matches); {
		m := matches[i]
		end := m.end
		// Overlapping matches become one replacement, labelled by the first.
		j := i + 1
		for ; j < len(matches) && matches[j].start < end; j++ {
			end = max(end, matches[j].end)
		}
		writeVisible(&b, text, pos, m.start)
		b.WriteString("[REDACTED:")
		b.WriteString(m.rule)
		b.WriteString("]")
		pos = end
		count++
		i = j
	}
	writeVisible(&b, text, pos, len(text))
	return b.String(), count + stripped
}
