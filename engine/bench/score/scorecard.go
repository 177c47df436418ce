package score

import (
	"errors"

	"github.com/bcode-dev/bcode/engine/bench"
)

// Format names the scorecard's JSON and its version; a file without it is
// not a scorecard.
const Format = "bcode-scorecard/1"

// Errors of reading reports and scorecards and of the policy; comparing
// runs made differently is bench.ErrNotComparable.
var (
	ErrReport    = errors.New("score: report")
	ErrScorecard = errors.New("score: scorecard")
	ErrPolicy    = errors.New("score: policy")
)

// Scorecard is what one or more runs of a suite scored, with what they
// were built from so that the gate can refuse to compare it with a
// scorecard of runs made differently.
type Scorecard struct {
	Format string `json:"format"`
	Basis  Basis  `json:"basis"`
	// Success is the rate of trials that passed; a trial the harness
	// could not grade (error) counts as one that did not.
	Success Breakdown `json:"success"`
	// FalseAcceptance (label not verified, verdict verified) and
	// FalseRejection (label verified, verdict not verified) are the
	// verify suite's; trials without a verdict are not counted.
	FalseAcceptance *Breakdown `json:"false_acceptance,omitempty"`
	FalseRejection  *Breakdown `json:"false_rejection,omitempty"`
	// Figures are by name (FigureNames); one nothing measured is absent.
	Figures  map[string]Figure `json:"figures"`
	Tasks    []TaskScore       `json:"tasks"`
	Flaky    []string          `json:"flaky"` // tasks that passed in some trials and not in others
	Security Security          `json:"security"`
	// Errors counts trials the harness could not grade.
	Errors      int      `json:"errors"`
	Limitations []string `json:"limitations"`
}

// Basis is what a scorecard was built from.
type Basis struct {
	Suite     bench.Suite   `json:"suite"`
	Model     bench.Model   `json:"model"`
	Budgets   bench.Budgets `json:"budgets"`
	TasksHash string        `json:"tasks_hash"`
	// Fixtures is the SHA-256 of each task's fixture, by task id.
	Fixtures map[string]string `json:"fixtures"`
	// Tasks are the ids of the tasks that ran, sorted.
	Tasks []string `json:"tasks"`
	Bcode string   `json:"bcode"` // the build that ran
	// Reports is how many reports went in, Trials how many trials they
	// held in all (a trial is one pass over the suite's tasks).
	Reports int `json:"reports"`
	Trials  int `json:"trials"`
}

// Breakdown is a rate overall and per group, language and split.
type Breakdown struct {
	Overall  Rate                 `json:"overall"`
	Group    map[bench.Group]Rate `json:"group"`
	Language map[string]Rate      `json:"language"`
	Split    map[bench.Split]Rate `json:"split"`
}

// The figures a scorecard measures, by name.
const (
	FigureTokensPerSuccess = "tokens_per_success" // tokens of all trials over their successes
	FigureSecondsMedian    = "seconds_median"     // a task trial's seconds
	FigureSecondsP90       = "seconds_p90"        // nearest rank
	FigureModelCalls       = "model_calls"        // mean per task trial
	FigureServerRSS        = "server_rss_bytes"   // the model server's peak
)

// FigureNames is every figure, in the order tables show them.
var FigureNames = []string{FigureTokensPerSuccess, FigureSecondsMedian, FigureSecondsP90, FigureModelCalls, FigureServerRSS}

// Figure is a measure over all trials with its spread across trials: the
// same measure taken over each trial alone, its minimum, maximum and
// standard deviation (population; 0 for one trial).
type Figure struct {
	Value    float64   `json:"value"`
	Min      float64   `json:"min"`
	Max      float64   `json:"max"`
	Stddev   float64   `json:"stddev"`
	PerTrial []float64 `json:"per_trial"`
}

// TaskScore is one task's trials.
type TaskScore struct {
	ID       string      `json:"id"`
	Group    bench.Group `json:"group"`
	Language string      `json:"language"`
	Split    bench.Split `json:"split"`
	Passes   int         `json:"passes"`
	Fails    int         `json:"fails"`
	Errors   int         `json:"errors"`
}

// Trials is how many trials the task has.
func (t TaskScore) Trials() int { return t.Passes + t.Fails + t.Errors }

// Security is what the agent did with injected instructions.
type Security struct {
	// Failures counts trials with a leak (a canary anywhere the agent's
	// work reached, or a protected path changed).
	Failures int `json:"failures"`
	// Attempts counts tool calls that followed an injection, refused or
	// not.
	Attempts int `json:"attempts"`
}
