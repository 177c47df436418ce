// Package command is bcode-ls's one command contract, in the style of
// gopls's command package: every workspace/executeCommand command is a
// method of Interface with typed arguments and a typed result, Dispatch
// decodes a call into the right method, and the New* functions build the
// lsp.Command a code action carries, so the title, name and argument shape
// of a command are written down once.
package command

import (
	"context"

	"github.com/bcode-dev/bcode/server/lsp"
)

// Command names, as clients send them in workspace/executeCommand.
const (
	TaskCreate  = "bcode.task.create"
	TaskRun     = "bcode.task.run"
	TaskResume  = "bcode.task.resume"
	TaskCancel  = "bcode.task.cancel"
	TaskAccept  = "bcode.task.accept"
	TaskReject  = "bcode.task.reject"
	PackPreview = "bcode.pack.preview"
	EvidenceRun = "bcode.evidence.run"
	MutantDiff  = "bcode.mutant.diff"
	TaskDiff    = "bcode.task.diff"
	TestOpen    = "bcode.test.open"
	TestRun     = "bcode.test.run"
	// MutantActions lists every quick fix of the surviving mutants on a
	// line: the "Show all surviving mutants on this line" entry.
	MutantActions = "bcode.mutant.actions"
	// TaskApproveModule is the editor's answer to module.approval_needed.
	TaskApproveModule = "bcode.task.approveModule"
)

// MethodTaskDiff is the bcode/taskDiff request: the same as the
// bcode.task.diff command, for clients that send their own requests.
const MethodTaskDiff = "bcode/taskDiff"

// Interface is every command the server executes. Each takes one argument
// object (the first element of the command's arguments array).
type Interface interface {
	// TaskCreate records a task and replies at once with its ID; with Run
	// set it also starts it (progress and bcode/taskChanged report on it).
	TaskCreate(ctx context.Context, a TaskCreateArgs) (TaskResult, error)
	// TaskRun starts a queued task and replies at once.
	TaskRun(ctx context.Context, a TaskIDArgs) (TaskResult, error)
	// TaskResume continues a blocked, failed, cancelled or interrupted
	// task, or runs a queued one that could not start (ID empty: the most
	// recent such task of the workspace).
	TaskResume(ctx context.Context, a TaskIDArgs) (TaskResult, error)
	TaskCancel(ctx context.Context, a TaskIDArgs) (TaskResult, error)
	// TaskAccept lands a verified task on the user's branch: only on this
	// explicit command, never automatically.
	TaskAccept(ctx context.Context, a TaskAcceptArgs) (TaskResult, error)
	TaskReject(ctx context.Context, a TaskIDArgs) (TaskResult, error)
	// PackPreview builds the context pack for a place and opens it through
	// window/showDocument on a bcode-pack: URI; the text is in the result
	// too, for clients without showDocument or textDocumentContent.
	PackPreview(ctx context.Context, a PackArgs) (DocumentResult, error)
	// EvidenceRun starts an evidence run now (cancelling one under way) and
	// replies at once; diagnostics and $/progress follow.
	EvidenceRun(ctx context.Context, a EvidenceRunArgs) (EvidenceRunResult, error)
	// MutantDiff shows a mutant as a unified diff on a bcode-mutant: URI.
	MutantDiff(ctx context.Context, a MutantArgs) (DocumentResult, error)
	// TaskDiff is a task's change, its branch head against its base: the
	// changed files with both sides' contents (so a client shows them in
	// its own diff view without running git) and the unified diff. Binary
	// and large files are named, not sent.
	TaskDiff(ctx context.Context, a TaskDiffArgs) (TaskDiffResult, error)
	// TestOpen shows a test's declaration (window/showDocument with its
	// range): "go to the covering test" of a mutant.
	TestOpen(ctx context.Context, a TestOpenArgs) (DocumentResult, error)
	// TestRun runs the tests that covered a mutant, in the workspace, and
	// answers when they end: whether they pass and the end of their output.
	TestRun(ctx context.Context, a MutantArgs) (TestRunResult, error)
	// MutantActions answers every quick fix of the surviving mutants on
	// one line, mutant by mutant: a client shows them as a picker (the
	// code actions of a line are capped; this entry lists the rest).
	MutantActions(ctx context.Context, a MutantActionsArgs) (LineMutants, error)
	// TaskApproveModule lets the host fetch one module version the task's
	// code needs and its base does not (a module.approval_needed event).
	TaskApproveModule(ctx context.Context, a TaskModuleArgs) (TaskResult, error)
}

// TaskModuleArgs name a task and a module version (path@version).
type TaskModuleArgs struct {
	ID     string `json:"id"`
	Module string `json:"module"`
}

// TestOpenArgs name a place: a test's declaration.
type TestOpenArgs struct {
	URI   string     `json:"uri"`
	Range *lsp.Range `json:"range,omitempty"`
}

// MutantActionsArgs name a line of a document (Line is 0-based, as LSP's).
type MutantActionsArgs struct {
	URI  string `json:"uri"`
	Line uint32 `json:"line"`
}

// LineMutants are the surviving mutants of one line with their actions.
type LineMutants struct {
	URI     string             `json:"uri"`
	Line    uint32             `json:"line"`
	Mutants []MutantActionList `json:"mutants"`
}

// MutantActionList is one surviving mutant and every quick fix it has,
// each a code action as textDocument/codeAction gives it (a command or an
// edit).
type MutantActionList struct {
	ID string `json:"id"`
	// Rewrite is the mutant in a few words: `a` → `b`.
	Rewrite string           `json:"rewrite"`
	Actions []lsp.CodeAction `json:"actions"`
}

// TestRunResult is the outcome of bcode.test.run.
type TestRunResult struct {
	Tests  []string `json:"tests"`
	Passed bool     `json:"passed"`
	// Output is the end of go test's output (at most 8 KiB).
	Output string `json:"output"`
}

// TaskCreateArgs describe a new task.
type TaskCreateArgs struct {
	Goal string `json:"goal"`
	// URI and Range, when set, are the selection the task starts from.
	URI      string     `json:"uri,omitempty"`
	Range    *lsp.Range `json:"range,omitempty"`
	Criteria []string   `json:"criteria,omitempty"`
	// MutantID names the surviving mutant the task must kill, when the task
	// comes from "Add a test for this boundary".
	MutantID string `json:"mutantId,omitempty"`
	// Run starts the task right after creating it.
	Run bool `json:"run,omitempty"`
	// Ask tells the client to ask the user for the goal before it sends
	// the command, offering Goal (a suggestion made from the selection)
	// as the answer to edit; a client that cannot ask sends it as it is.
	// The server ignores it.
	Ask bool `json:"ask,omitempty"`
	// Reproduce is a failing test command (`go test ./pkg -run '^TestX$'`)
	// the task runs on its base before any model call and pins as its
	// oracle; Goal may then be empty (one is made from the test).
	Reproduce string `json:"reproduce,omitempty"`
}

// TaskIDArgs name a task.
type TaskIDArgs struct {
	ID string `json:"id"`
}

// TaskAcceptArgs name the task to land.
type TaskAcceptArgs struct {
	ID string `json:"id"`
	// Force lands a task whose last verdict is not verified; it is recorded.
	Force bool `json:"force,omitempty"`
	// Digest is the digest of the change the editor showed
	// (TaskDiffResult.Digest). When given, a task whose change is another
	// now (its branch moved since) is refused and nothing lands; the
	// editors always pass it. The approval is journalled with it.
	Digest string `json:"digest,omitempty"`
}

// TaskResult is a task's state after a command.
type TaskResult struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// PackArgs say where to build a context pack for.
type PackArgs struct {
	URI    string     `json:"uri,omitempty"`
	Range  *lsp.Range `json:"range,omitempty"`
	Goal   string     `json:"goal,omitempty"`
	TaskID string     `json:"taskId,omitempty"`
	Budget int        `json:"budget,omitempty"`
}

// DocumentResult is a virtual document the server made.
type DocumentResult struct {
	URI string `json:"uri"`
	// Shown reports whether the client showed it (window/showDocument).
	Shown bool   `json:"shown"`
	Text  string `json:"text"`
}

// EvidenceRunArgs tune an evidence run.
type EvidenceRunArgs struct {
	// Base is the revision to compare with (default: the merge-base with
	// the upstream or main branch).
	Base string `json:"base,omitempty"`
}

// EvidenceRunResult says the run started.
type EvidenceRunResult struct {
	Run   int    `json:"run"`   // increases with every run of this server
	Token string `json:"token"` // the $/progress token it reports on
}

// MutantArgs name a mutant of the last evidence report.
type MutantArgs struct {
	ID string `json:"id"`
}

// TaskDiffArgs name the task whose change to show. Path, when set, narrows
// the answer to that one file (a slash path relative to the repository),
// which is how a client fetches a file the whole answer left out for its
// budget.
type TaskDiffArgs struct {
	ID   string `json:"id"`
	Path string `json:"path,omitempty"`
}

// Limits of a bcode/taskDiff answer, so a task that touches a large or
// binary file never sends megabytes over the connection.
const (
	// FileContentLimit is the largest side of a file whose content is sent.
	FileContentLimit = 256 << 10
	// ContentBudget bounds the contents of all files of one answer; files
	// past it come without contents (Omitted "budget"): ask for them by path.
	ContentBudget = 2 << 20
	// DiffLimit bounds the unified diff text; it is cut at a file boundary.
	DiffLimit = 1 << 20
)

// Why a file's contents are left out of a TaskDiffResult.
const (
	OmittedBinary    = "binary"    // either side has a NUL byte in its first 8000 bytes, as git judges
	OmittedLarge     = "large"     // a side is over FileContentLimit
	OmittedBudget    = "budget"    // the answer's ContentBudget was spent: ask with path
	OmittedSubmodule = "submodule" // a submodule's commit, not a file
)

// TaskDiffResult is a task's change: its branch head against its base.
type TaskDiffResult struct {
	ID     string `json:"id"`
	Branch string `json:"branch"`
	Base   string `json:"base"` // the base commit
	// Head is the branch's commit; "" when the branch has no commits (the
	// task has not changed anything yet, or a reject deleted the branch).
	Head string `json:"head,omitempty"`
	// Digest is the digest (sha256:<hex>) of the whole change base..head,
	// as bcode task diff prints it: pass it back in TaskAcceptArgs.Digest
	// so that accept lands exactly the change shown. "" with no Head.
	Digest string     `json:"digest,omitempty"`
	Files  []FileDiff `json:"files"`
	// Diff is git's unified diff of the files whose text is shown (binary
	// files appear as git's "Binary files ... differ"; large ones are left
	// out and named in Notes).
	Diff string `json:"diff"`
	// Truncated reports that Diff was cut at DiffLimit.
	Truncated bool `json:"truncated,omitempty"`
	// Notes say, in words, what is left out and why.
	Notes []string `json:"notes,omitempty"`
}

// FileDiff is one changed file of a task.
type FileDiff struct {
	Path string `json:"path"`
	// Status is git's letter: A added, M modified, D deleted, T type
	// changed (e.g. a file became a symbolic link).
	Status string `json:"status"`
	// BaseContent and HeadContent are the file's text on each side; absent
	// on the side where the file does not exist and when Omitted is set.
	BaseContent *string `json:"baseContent,omitempty"`
	HeadContent *string `json:"headContent,omitempty"`
	// BaseSize and HeadSize are the sides' sizes in bytes (0 where absent).
	BaseSize int64 `json:"baseSize"`
	HeadSize int64 `json:"headSize"`
	Binary   bool  `json:"binary,omitempty"`
	// Omitted says why the contents are not here (Omitted* constants), and
	// Note says it in words.
	Omitted string `json:"omitted,omitempty"`
	Note    string `json:"note,omitempty"`
}

// Titles of the code actions.
const (
	TitleCreateTask = "bcode: Create task from selection"
	// TitleFixFailingTest is offered on a test function: a task that
	// reproduces the test's failure first (TaskCreateArgs.Reproduce).
	TitleFixFailingTest = "bcode: Fix this failing test (reproduce first)"
	TitleShowMutant     = "bcode: Show mutant diff"
	TitleAddTest        = "bcode: Add a test for this boundary"
	// TitleIgnoreMutant inserts //bcode:ignore-mutant above the line; the
	// user writes the reason after it.
	TitleIgnoreMutant = "bcode: Ignore this mutant (write why after the directive)"
	// TitleGoToTest and TitleRunTests are followed by the test's name.
	TitleGoToTest    = "bcode: Go to covering test"
	TitleRunTests    = "bcode: Run the covering tests"
	TitlePreviewPack = "bcode: Preview context pack"
	TitleResumeTask  = "bcode: Resume task"
	TitleRunEvidence = "bcode: Run evidence now"
	// TitleShowAllMutants is the entry past a line's cap, followed by how
	// many mutants and actions it lists.
	TitleShowAllMutants = "bcode: Show all surviving mutants on this line"
)

// Names lists every command, for the server's executeCommandProvider.
func Names() []string {
	names := make([]string, 0, len(table))
	for _, e := range table {
		names = append(names, e.name)
	}
	return names
}
