package attest

import (
	"fmt"
	"regexp"
	"time"
)

// Predicate is what bcode says of the attested change: the gate's verdict
// on the head commit and what it rests on, who asked for the task and
// whether it was accepted. Its JSON form is the statement's predicate;
// docs/attestation.md describes each field.
type Predicate struct {
	Task    TaskInfo `json:"task"`
	Base    string   `json:"base"` // the commit the change starts from
	Head    string   `json:"head"` // the commit the change ends at (also a subject)
	Verdict string   `json:"verdict"`
	// Level is the verification level the check reached (V1, V2, V3 or
	// none), LevelRequired the one the base's configuration asks for; ""
	// when the check report does not name them.
	Level         string   `json:"level"`
	LevelRequired string   `json:"level_required"`
	Reasons       []Reason `json:"reasons"`
	// Oracle is the task's pinned failing tests, Credited the tests that
	// failed on the base and pass on the head; test IDs as the gate names
	// them (language:package:name).
	Oracle     []string    `json:"oracle"`
	Credited   []string    `json:"credited"`
	PassToPass *PassToPass `json:"pass_to_pass,omitempty"`
	Findings   []Finding   `json:"findings"`
	// CheckedAt is when the gate judged Head, Runner where its tests ran;
	// both absent when no check of Head is recorded.
	CheckedAt *time.Time `json:"checked_at,omitempty"`
	Runner    string     `json:"runner,omitempty"`
	Bcode     Build      `json:"bcode"`
	// Toolchains are the versions of the toolchains (go, python, node,
	// cargo), read where ToolchainsSource says: ToolchainsFromCheck or
	// ToolchainsFromExport.
	Toolchains       map[string]string `json:"toolchains,omitempty"`
	ToolchainsSource string            `json:"toolchains_source,omitempty"`
	Approval         *Approval         `json:"approval,omitempty"`
}

// TaskInfo names the task the change came from.
type TaskInfo struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// Reason is one of the gate's reason codes with its sentence.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// PassToPass counts the pass-to-pass check: test IDs that passed on the
// base, and those of them that fail, vanished or failed on both sides.
type PassToPass struct {
	Checked     int `json:"checked"`
	Failed      int `json:"failed"`
	Vanished    int `json:"vanished"`
	PreExisting int `json:"pre_existing"`
}

// Finding is one tamper, landing or unsupported-language finding.
type Finding struct {
	Code    string `json:"code"`
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// Build is the bcode that made the attestation.
type Build struct {
	Version string `json:"version"`
	Go      string `json:"go"`
}

// Approval is the user's acceptance of the task, when it was accepted.
type Approval struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Forced bool      `json:"forced"`
	Method string    `json:"method,omitempty"`
	// Digest is the diff digest the user reviewed, when the accept
	// recorded one.
	Digest string `json:"digest,omitempty"`
}

// Unchecked is the verdict of a head no recorded check judged. The others
// are the gate's (verify.Verdict).
const Unchecked = "unchecked"

var (
	verdicts  = map[string]bool{"verified": true, "green": true, "failed": true, "tampered": true, "error": true, Unchecked: true}
	commitID  = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	levelName = regexp.MustCompile(`^(none|V[1-9])?$`)
)

// Validate checks the fields a verifier relies on.
func (p *Predicate) Validate() error {
	switch {
	case p.Task.ID == "":
		return fmt.Errorf("%w: no task id", ErrPredicate)
	case p.Task.Attempts < 0:
		return fmt.Errorf("%w: negative attempts %d", ErrPredicate, p.Task.Attempts)
	case !commitID.MatchString(p.Base):
		return fmt.Errorf("%w: base %q is not a commit id", ErrPredicate, p.Base)
	case !commitID.MatchString(p.Head):
		return fmt.Errorf("%w: head %q is not a commit id", ErrPredicate, p.Head)
	case !verdicts[p.Verdict]:
		return fmt.Errorf("%w: unknown verdict %q", ErrPredicate, p.Verdict)
	case !levelName.MatchString(p.Level) || !levelName.MatchString(p.LevelRequired):
		return fmt.Errorf("%w: unknown level %q (required %q)", ErrPredicate, p.Level, p.LevelRequired)
	case p.Bcode.Version == "":
		return fmt.Errorf("%w: no bcode version", ErrPredicate)
	case p.Oracle == nil || p.Credited == nil || p.Findings == nil || p.Reasons == nil:
		return fmt.Errorf("%w: oracle, credited, findings and reasons must be present (empty lists allowed)", ErrPredicate)
	case len(p.Toolchains) > 0 && p.ToolchainsSource != ToolchainsFromCheck && p.ToolchainsSource != ToolchainsFromExport:
		return fmt.Errorf("%w: toolchains from %q", ErrPredicate, p.ToolchainsSource)
	case p.Approval != nil && (p.Approval.By == "" || p.Approval.At.IsZero()):
		return fmt.Errorf("%w: an approval needs who and when", ErrPredicate)
	}
	return nil
}
