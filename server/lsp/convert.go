package lsp

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// protoServer turns the protocol library's typed calls into Handler calls.
type protoServer struct {
	protocol.UnimplementedServer
	h         Handler
	closeConn func()
	// shutdown is set once the client asked for shutdown: an exit
	// without it is an abnormal end (the spec's exit code 1).
	shutdown atomic.Bool
}

// rootURI reads the deprecated rootUri: clients older than
// workspaceFolders (Neovim 0.7 among them) send only that.
func rootURI(p *protocol.InitializeParams) *string {
	//lint:ignore SA1019 read only for clients that lack workspaceFolders
	r := p.RootURI
	if r == nil {
		return nil
	}
	u := string(*r)
	return &u
}

func (s *protoServer) Initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	ip := &InitializeParams{ClientName: p.ClientInfo.Name}
	if root := rootURI(p); root != nil {
		ip.RootURI = *root
	}
	if folders, ok := p.WorkspaceFolders.Get(); ok {
		for _, f := range folders {
			ip.WorkspaceFolders = append(ip.WorkspaceFolders, string(f.URI))
		}
	}
	if w := p.Capabilities.Window; w != nil {
		ip.WorkDoneProgress = w.WorkDoneProgress != nil && *w.WorkDoneProgress
		ip.ShowDocument = w.ShowDocument != nil && w.ShowDocument.Support
	}
	if ws := p.Capabilities.Workspace; ws != nil {
		ip.TextDocumentContent = ws.TextDocumentContent != nil
	}
	if len(p.InitializationOptions) > 0 {
		ip.InitializationOptions = json.RawMessage(append([]byte(nil), p.InitializationOptions...))
	}
	res, err := s.h.Initialize(ctx, ip)
	if err != nil {
		return nil, err
	}
	yes := true
	full := protocol.TextDocumentSyncKindIncremental
	kinds := make([]protocol.CodeActionKind, len(res.CodeActionKinds))
	for i, k := range res.CodeActionKinds {
		kinds[i] = protocol.CodeActionKind(k)
	}
	caps := protocol.ServerCapabilities{
		TextDocumentSync: &protocol.TextDocumentSyncOptions{
			OpenClose: &yes,
			Change:    &full,
			Save:      &protocol.SaveOptions{},
		},
		CodeActionProvider:     &protocol.CodeActionOptions{CodeActionKinds: kinds},
		ExecuteCommandProvider: protocol.ExecuteCommandOptions{Commands: res.Commands},
	}
	if len(res.ContentSchemes) > 0 {
		caps.Workspace = &protocol.WorkspaceOptions{
			TextDocumentContent: &protocol.TextDocumentContentOptions{Schemes: res.ContentSchemes},
		}
	}
	out := &protocol.InitializeResult{Capabilities: caps, ServerInfo: protocol.ServerInfo{Name: res.ServerName}}
	if res.ServerVersion != "" {
		out.ServerInfo.Version = protocol.NewOptional(res.ServerVersion)
	}
	return out, nil
}

func (s *protoServer) Initialized(ctx context.Context, _ *protocol.InitializedParams) error {
	s.h.Initialized(ctx)
	return nil
}

func (s *protoServer) Shutdown(ctx context.Context) error {
	s.shutdown.Store(true)
	return s.h.Shutdown(ctx)
}

func (s *protoServer) Exit(ctx context.Context) error {
	s.h.Exit(ctx)
	s.closeConn()
	return nil
}

func (s *protoServer) DidOpen(ctx context.Context, p *protocol.DidOpenTextDocumentParams) error {
	d := p.TextDocument
	s.h.DidOpen(ctx, TextDocumentItem{URI: string(d.URI), LanguageID: string(d.LanguageID), Version: d.Version, Text: d.Text})
	return nil
}

func (s *protoServer) DidChange(ctx context.Context, p *protocol.DidChangeTextDocumentParams) error {
	changes := make([]ContentChange, 0, len(p.ContentChanges))
	for _, c := range p.ContentChanges {
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangePartial:
			r := fromRange(c.Range)
			changes = append(changes, ContentChange{Range: &r, Text: c.Text})
		case *protocol.TextDocumentContentChangeWholeDocument:
			changes = append(changes, ContentChange{Text: c.Text})
		}
	}
	s.h.DidChange(ctx, string(p.TextDocument.URI), p.TextDocument.Version, changes)
	return nil
}

func (s *protoServer) DidSave(ctx context.Context, p *protocol.DidSaveTextDocumentParams) error {
	s.h.DidSave(ctx, string(p.TextDocument.URI))
	return nil
}

func (s *protoServer) DidClose(ctx context.Context, p *protocol.DidCloseTextDocumentParams) error {
	s.h.DidClose(ctx, string(p.TextDocument.URI))
	return nil
}

func (s *protoServer) DidChangeWatchedFiles(ctx context.Context, p *protocol.DidChangeWatchedFilesParams) error {
	uris := make([]string, len(p.Changes))
	for i, c := range p.Changes {
		uris[i] = string(c.URI)
	}
	s.h.DidChangeWatchedFiles(ctx, uris)
	return nil
}

func (s *protoServer) WorkDoneProgressCancel(ctx context.Context, p *protocol.WorkDoneProgressCancelParams) error {
	s.h.WorkDoneProgressCancel(ctx, ProgressToken(tokenString(p.Token)))
	return nil
}

func (s *protoServer) CodeAction(ctx context.Context, p *protocol.CodeActionParams) ([]protocol.CommandOrCodeAction, error) {
	cp := &CodeActionParams{URI: string(p.TextDocument.URI), Range: fromRange(p.Range)}
	for _, d := range p.Context.Diagnostics {
		cp.Diagnostics = append(cp.Diagnostics, fromDiagnostic(d))
	}
	for _, k := range p.Context.Only {
		cp.Only = append(cp.Only, string(k))
	}
	actions, err := s.h.CodeAction(ctx, cp)
	if err != nil {
		return nil, err
	}
	out := make([]protocol.CommandOrCodeAction, 0, len(actions))
	for _, a := range actions {
		pa := &protocol.CodeAction{Title: a.Title}
		if a.Kind != "" {
			k := protocol.CodeActionKind(a.Kind)
			pa.Kind = &k
		}
		for _, d := range a.Diagnostics {
			pa.Diagnostics = append(pa.Diagnostics, toDiagnostic(d))
		}
		if a.IsPreferred {
			yes := true
			pa.IsPreferred = &yes
		}
		if a.Edit != nil {
			we := &protocol.WorkspaceEdit{Changes: map[uri.URI][]protocol.TextEdit{}}
			for u, edits := range a.Edit.Changes {
				for _, e := range edits {
					we.Changes[uri.URI(u)] = append(we.Changes[uri.URI(u)], protocol.TextEdit{Range: toRange(e.Range), NewText: e.NewText})
				}
			}
			pa.Edit = we
		}
		if a.Command != nil {
			pa.Command = toCommand(*a.Command)
		}
		out = append(out, pa)
	}
	return out, nil
}

func (s *protoServer) DidChangeConfiguration(ctx context.Context, p *protocol.DidChangeConfigurationParams) error {
	s.h.DidChangeConfiguration(ctx, json.RawMessage(append([]byte(nil), p.Settings...)))
	return nil
}

func (s *protoServer) ExecuteCommand(ctx context.Context, p *protocol.ExecuteCommandParams) (protocol.LSPAny, error) {
	args := make([]json.RawMessage, len(p.Arguments))
	for i, a := range p.Arguments {
		args[i] = json.RawMessage(append([]byte(nil), a...))
	}
	res, err := s.h.ExecuteCommand(ctx, p.Command, args)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "encoding the result of %s: %v", p.Command, err)
	}
	return protocol.LSPAny(b), nil
}

func (s *protoServer) TextDocumentContent(ctx context.Context, p *protocol.TextDocumentContentParams) (*protocol.TextDocumentContentResult, error) {
	text, err := s.h.TextDocumentContent(ctx, string(p.URI))
	if err != nil {
		return nil, err
	}
	return &protocol.TextDocumentContentResult{Text: text}, nil
}

// client sends to the client through the protocol library's dispatcher.
type client struct {
	conn jsonrpc2.Conn
	d    protocol.Client
}

func (c *client) PublishDiagnostics(ctx context.Context, u string, diags []Diagnostic) error {
	out := make([]protocol.Diagnostic, len(diags))
	for i, d := range diags {
		out[i] = toDiagnostic(d)
	}
	return c.d.PublishDiagnostics(ctx, &protocol.PublishDiagnosticsParams{URI: uri.URI(u), Diagnostics: out})
}

func (c *client) CreateProgress(ctx context.Context, token ProgressToken) error {
	return c.d.WorkDoneProgressCreate(ctx, &protocol.WorkDoneProgressCreateParams{Token: protocol.String(token)})
}

func (c *client) Progress(ctx context.Context, token ProgressToken, v ProgressValue) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.d.Progress(ctx, &protocol.ProgressParams{Token: protocol.String(token), Value: protocol.LSPAny(b)})
}

func (c *client) ShowDocument(ctx context.Context, u string, takeFocus bool) (bool, error) {
	res, err := c.d.ShowDocument(ctx, &protocol.ShowDocumentParams{URI: uri.URI(u), TakeFocus: &takeFocus})
	if err != nil {
		return false, err
	}
	return res != nil && res.Success, nil
}

func (c *client) ShowLocation(ctx context.Context, u string, r Range) (bool, error) {
	yes := true
	sel := toRange(r)
	res, err := c.d.ShowDocument(ctx, &protocol.ShowDocumentParams{URI: uri.URI(u), TakeFocus: &yes, Selection: &sel})
	if err != nil {
		return false, err
	}
	return res != nil && res.Success, nil
}

func (c *client) ShowMessage(ctx context.Context, t MessageType, msg string) error {
	return c.d.ShowMessage(ctx, &protocol.ShowMessageParams{Type: protocol.MessageType(t), Message: msg})
}

func (c *client) ShowMessageRequest(ctx context.Context, t MessageType, msg string, actions []string) (string, error) {
	items := make([]protocol.MessageActionItem, len(actions))
	for i, a := range actions {
		items[i] = protocol.MessageActionItem{Title: a}
	}
	res, err := c.d.ShowMessageRequest(ctx, &protocol.ShowMessageRequestParams{Type: protocol.MessageType(t), Message: msg, Actions: items})
	if err != nil || res == nil {
		return "", err
	}
	return res.Title, nil
}

func (c *client) LogMessage(ctx context.Context, t MessageType, msg string) error {
	return c.d.LogMessage(ctx, &protocol.LogMessageParams{Type: protocol.MessageType(t), Message: msg})
}

func (c *client) Notify(ctx context.Context, method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.conn.Notify(ctx, method, jsonrpc2.RawMessage(b))
}

func tokenString(t protocol.ProgressToken) string {
	switch t := t.(type) {
	case protocol.String:
		return string(t)
	case protocol.Integer:
		return strconv.Itoa(int(t))
	}
	return ""
}

func fromRange(r protocol.Range) Range {
	return Range{
		Start: Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   Position{Line: r.End.Line, Character: r.End.Character},
	}
}

func toRange(r Range) protocol.Range {
	return protocol.Range{
		Start: protocol.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   protocol.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

func toDiagnostic(d Diagnostic) protocol.Diagnostic {
	out := protocol.Diagnostic{
		Range:    toRange(d.Range),
		Severity: protocol.DiagnosticSeverity(d.Severity),
		Message:  protocol.String(d.Message),
	}
	if d.Code != "" {
		out.Code = protocol.String(d.Code)
	}
	if d.Source != "" {
		out.Source = protocol.NewOptional(d.Source)
	}
	for _, r := range d.RelatedInformation {
		out.RelatedInformation = append(out.RelatedInformation, protocol.DiagnosticRelatedInformation{
			Location: protocol.Location{URI: uri.URI(r.Location.URI), Range: toRange(r.Location.Range)},
			Message:  r.Message,
		})
	}
	if len(d.Data) > 0 {
		out.Data = protocol.LSPAny(d.Data)
	}
	return out
}

func fromDiagnostic(d protocol.Diagnostic) Diagnostic {
	out := Diagnostic{Range: fromRange(d.Range), Severity: Severity(d.Severity)}
	switch c := d.Code.(type) {
	case protocol.String:
		out.Code = string(c)
	case protocol.Integer:
		out.Code = strconv.Itoa(int(c))
	}
	out.Source, _ = d.Source.Get()
	switch m := d.Message.(type) {
	case protocol.String:
		out.Message = string(m)
	case *protocol.MarkupContent:
		out.Message = m.Value
	}
	for _, r := range d.RelatedInformation {
		out.RelatedInformation = append(out.RelatedInformation, RelatedInformation{
			Location: Location{URI: string(r.Location.URI), Range: fromRange(r.Location.Range)},
			Message:  r.Message,
		})
	}
	if len(d.Data) > 0 {
		out.Data = json.RawMessage(append([]byte(nil), d.Data...))
	}
	return out
}

func toCommand(c Command) protocol.Command {
	pc := protocol.Command{Title: c.Title, Command: c.Command}
	for _, a := range c.Arguments {
		pc.Arguments = append(pc.Arguments, protocol.LSPAny(a))
	}
	return pc
}

// FileURI is the file: URI of an absolute path.
func FileURI(path string) string { return string(uri.File(path)) }

// URIPath is the file-system path of a file: URI, or an error naming the URI.
func URIPath(u string) (string, error) {
	parsed, err := uri.Parse(u)
	if err != nil {
		return "", Errorf(CodeInvalidParams, "malformed URI %q: %v", u, err)
	}
	if parsed.Scheme() != "file" {
		return "", Errorf(CodeInvalidParams, "URI %q is not a file: URI", u)
	}
	return parsed.FsPath(), nil
}
