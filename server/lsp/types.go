// Package lsp is bcode-ls's one door to the Language Server Protocol
// libraries (go.lsp.dev/protocol and go.lsp.dev/jsonrpc2). The rest of the
// server speaks only the small types and interfaces defined here, so the
// protocol library can be replaced by changing this package alone.
//
// The types carry the LSP wire names in their JSON tags: the client side of
// this package (ClientConn, and the one client of bcode-ls on it,
// ClientSession: the fake editor's over a pipe, and through Child the one of
// `bcode ci` and the benchmarks over a child process's stdio) encodes them
// with encoding/json, independently of the protocol library the server side
// decodes with, so a test through both ends checks the real wire.
package lsp

import (
	"encoding/json"
	"fmt"
)

// Position is a zero-based line and a character offset counted in UTF-16
// code units, as LSP requires by default.
type Position struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// Range is a half-open range of positions.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Empty reports whether the range selects nothing.
func (r Range) Empty() bool { return r.Start == r.End }

// Location is a range in a document.
type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

// Severity is a diagnostic's severity.
type Severity int

const (
	SeverityError       Severity = 1
	SeverityWarning     Severity = 2
	SeverityInformation Severity = 3
	SeverityHint        Severity = 4
)

// RelatedInformation points from a diagnostic to another place.
type RelatedInformation struct {
	Location Location `json:"location"`
	Message  string   `json:"message"`
}

// Diagnostic is one problem shown on a range of a document.
type Diagnostic struct {
	Range              Range                `json:"range"`
	Severity           Severity             `json:"severity,omitempty"`
	Code               string               `json:"code,omitempty"`
	Source             string               `json:"source,omitempty"`
	Message            string               `json:"message"`
	RelatedInformation []RelatedInformation `json:"relatedInformation,omitempty"`
	// Data is kept by the client between publishDiagnostics and
	// codeAction, so code actions can name the diagnostic's subject.
	Data json.RawMessage `json:"data,omitempty"`
}

// Command is a workspace/executeCommand invocation a client can run.
type Command struct {
	Title     string            `json:"title"`
	Command   string            `json:"command"`
	Arguments []json.RawMessage `json:"arguments,omitempty"`
}

// Code action kinds bcode offers.
const (
	KindQuickFix = "quickfix"
	KindRefactor = "refactor"
	KindSource   = "source"
)

// CodeAction is an action offered at a place, backed by a command.
type CodeAction struct {
	Title       string         `json:"title"`
	Kind        string         `json:"kind,omitempty"`
	Diagnostics []Diagnostic   `json:"diagnostics,omitempty"`
	IsPreferred bool           `json:"isPreferred,omitempty"`
	Edit        *WorkspaceEdit `json:"edit,omitempty"`
	Command     *Command       `json:"command,omitempty"`
}

// WorkspaceEdit is a set of text edits by document URI.
type WorkspaceEdit struct {
	Changes map[string][]TextEdit `json:"changes"`
}

// TextEdit replaces Range with NewText (an insertion when Range is empty).
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// TextDocumentItem is an opened document.
type TextDocumentItem struct {
	URI        string `json:"uri"`
	LanguageID string `json:"languageId"`
	Version    int32  `json:"version"`
	Text       string `json:"text"`
}

// ContentChange is one edit of a document: a nil Range replaces the whole
// text.
type ContentChange struct {
	Range *Range `json:"range,omitempty"`
	Text  string `json:"text"`
}

// InitializeParams is what bcode-ls needs from the client's initialize.
type InitializeParams struct {
	RootURI          string
	WorkspaceFolders []string // URIs
	ClientName       string
	// Client capabilities that change what the server does.
	WorkDoneProgress    bool // the client shows $/progress it is asked to create
	ShowDocument        bool // the client supports window/showDocument
	TextDocumentContent bool // the client supports workspace/textDocumentContent (LSP 3.18)
	// InitializationOptions is what the client's configuration passes at
	// start (bcode's settings), as sent.
	InitializationOptions json.RawMessage
}

// InitializeResult is what the server announces.
type InitializeResult struct {
	ServerName    string
	ServerVersion string
	// Commands are the workspace/executeCommand commands served.
	Commands []string
	// ContentSchemes are the URI schemes workspace/textDocumentContent serves.
	ContentSchemes []string
	// CodeActionKinds are the kinds of code actions offered.
	CodeActionKinds []string
}

// MessageType is the type of a window/showMessage or logMessage.
type MessageType int

const (
	MessageError   MessageType = 1
	MessageWarning MessageType = 2
	MessageInfo    MessageType = 3
	MessageLog     MessageType = 4
)

// CodeActionParams asks for the actions at a range.
type CodeActionParams struct {
	URI         string
	Range       Range
	Diagnostics []Diagnostic // the diagnostics the client has at the range
	Only        []string
}

// ProgressToken names one $/progress stream.
type ProgressToken string

// ProgressValue is one $/progress report: Kind is "begin", "report" or "end".
type ProgressValue struct {
	Kind        string  `json:"kind"`
	Title       string  `json:"title,omitempty"`
	Message     string  `json:"message,omitempty"`
	Percentage  *uint32 `json:"percentage,omitempty"`
	Cancellable bool    `json:"cancellable,omitempty"`
}

// Error codes of the JSON-RPC and LSP specifications.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeNotInitialized   = -32002
	CodeRequestFailed    = -32803
	CodeServerCancelled  = -32802
	CodeContentModified  = -32801
	CodeRequestCancelled = -32800
)

// Error is a JSON-RPC error response: what the server answers a bad
// request with, and what ClientConn.Call returns for one.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// Errorf makes an Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
