package lspclient

import (
	"context"
	"encoding/json"
)

// Position is zero-based, in UTF-16 code units as LSP says.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is a span of a document.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Location is a range in a document.
type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

// SymbolKind is LSP's symbol kind number (12 = function, 6 = method,
// 5 = class).
type SymbolKind int

// DocumentSymbol is one symbol of a document, with its children.
type DocumentSymbol struct {
	Name           string           `json:"name"`
	Detail         string           `json:"detail,omitempty"`
	Kind           SymbolKind       `json:"kind"`
	Range          Range            `json:"range"`
	SelectionRange Range            `json:"selectionRange"`
	Children       []DocumentSymbol `json:"children,omitempty"`
}

// CallHierarchyItem is a function or method in a call hierarchy.
type CallHierarchyItem struct {
	Name           string          `json:"name"`
	Kind           SymbolKind      `json:"kind"`
	Detail         string          `json:"detail,omitempty"`
	URI            string          `json:"uri"`
	Range          Range           `json:"range"`
	SelectionRange Range           `json:"selectionRange"`
	Data           json.RawMessage `json:"data,omitempty"`
}

// IncomingCall is a caller of an item.
type IncomingCall struct {
	From       CallHierarchyItem `json:"from"`
	FromRanges []Range           `json:"fromRanges"`
}

// OutgoingCall is a callee of an item.
type OutgoingCall struct {
	To         CallHierarchyItem `json:"to"`
	FromRanges []Range           `json:"fromRanges"`
}

// DidOpen tells the server a document is open with text.
func (c *Client) DidOpen(uri, languageID, text string) error {
	return c.Notify("textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": languageID, "version": 1, "text": text},
	})
}

// DocumentSymbols returns the document's symbols as a tree.
func (c *Client) DocumentSymbols(ctx context.Context, uri string) ([]DocumentSymbol, error) {
	var out []DocumentSymbol
	err := c.Call(ctx, "textDocument/documentSymbol", map[string]any{"textDocument": map[string]string{"uri": uri}}, &out)
	return out, err
}

// References returns the places that refer to the symbol at pos.
func (c *Client) References(ctx context.Context, uri string, pos Position, includeDecl bool) ([]Location, error) {
	var out []Location
	err := c.Call(ctx, "textDocument/references", map[string]any{
		"textDocument": map[string]string{"uri": uri},
		"position":     pos,
		"context":      map[string]bool{"includeDeclaration": includeDecl},
	}, &out)
	return out, err
}

// PrepareCallHierarchy returns the call-hierarchy items at pos.
func (c *Client) PrepareCallHierarchy(ctx context.Context, uri string, pos Position) ([]CallHierarchyItem, error) {
	var out []CallHierarchyItem
	err := c.Call(ctx, "textDocument/prepareCallHierarchy", map[string]any{
		"textDocument": map[string]string{"uri": uri},
		"position":     pos,
	}, &out)
	return out, err
}

// IncomingCalls returns the callers of item.
func (c *Client) IncomingCalls(ctx context.Context, item CallHierarchyItem) ([]IncomingCall, error) {
	var out []IncomingCall
	err := c.Call(ctx, "callHierarchy/incomingCalls", map[string]any{"item": item}, &out)
	return out, err
}

// OutgoingCalls returns the callees of item.
func (c *Client) OutgoingCalls(ctx context.Context, item CallHierarchyItem) ([]OutgoingCall, error) {
	var out []OutgoingCall
	err := c.Call(ctx, "callHierarchy/outgoingCalls", map[string]any{"item": item}, &out)
	return out, err
}
