// A small stand-in for the `vscode` API, enough to run the extension's own
// logic (tree items, commands, status bar, virtual documents) under
// node --test. It records what the extension asked of the editor in
// `calls`, and tests script the user's answers with `answers`.
'use strict';

const calls = [];
const answers = { warning: [], error: [], info: [], input: [], pick: [], cancelProgress: [] };
const commands = new Map();
const providers = new Map();

function reset() {
  calls.length = 0;
  for (const k of Object.keys(answers)) answers[k].length = 0;
}

class EventEmitter {
  constructor() { this.listeners = []; this.event = (l) => { this.listeners.push(l); return { dispose() {} }; }; }
  fire(v) { for (const l of this.listeners) l(v); }
  dispose() {}
}

class Uri {
  constructor(scheme, authority, path, query, fragment) {
    Object.assign(this, { scheme, authority: authority || '', path: path || '', query: query || '', fragment: fragment || '' });
  }
  static from(c) { return new Uri(c.scheme, c.authority, c.path, c.query, c.fragment); }
  static file(p) { return new Uri('file', '', p); }
  static parse(s) {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(s);
    if (!m) throw new Error('bad uri ' + s);
    return new Uri(m[1], m[2], decodeURIComponent(m[3]), m[4] ? decodeURIComponent(m[4]) : '', m[5]);
  }
  get fsPath() { return this.path; }
  toString() {
    return `${this.scheme}:${this.authority ? '//' + this.authority : (this.scheme === 'file' ? '//' : '')}${this.path}${this.query ? '?' + this.query : ''}`;
  }
}

class TreeItem { constructor(label, collapsibleState) { this.label = label; this.collapsibleState = collapsibleState; } }
class ThemeIcon { constructor(id, color) { this.id = id; this.color = color; } }
class ThemeColor { constructor(id) { this.id = id; } }
class MarkdownString { constructor(value) { this.value = value; } }
class Position { constructor(line, character) { this.line = line; this.character = character; } }
class Range { constructor(s, e) { this.start = s; this.end = e; } get isEmpty() { return this.start.line === this.end.line && this.start.character === this.end.character; } }
class Selection extends Range {}

function record(kind, args) { calls.push({ kind, args }); }

// A cancellation token as vscode's: a test cancels a progress with
// answers.cancelProgress (true: the user presses Cancel at once).
class CancellationTokenSource {
  constructor() {
    const listeners = [];
    this.token = {
      isCancellationRequested: false,
      onCancellationRequested: (l) => { listeners.push(l); return { dispose() { const i = listeners.indexOf(l); if (i >= 0) listeners.splice(i, 1); } }; },
    };
    this.cancel = () => {
      if (this.token.isCancellationRequested) return;
      this.token.isCancellationRequested = true;
      for (const l of listeners.slice()) l();
    };
  }
}

const window = {
  activeTextEditor: undefined,
  createStatusBarItem(id, alignment, priority) {
    const item = { id, alignment, priority, text: '', tooltip: '', shown: false, show() { this.shown = true; }, hide() { this.shown = false; }, dispose() {} };
    record('createStatusBarItem', [id]);
    return item;
  },
  async showWarningMessage(...args) { record('showWarningMessage', args); return answers.warning.shift(); },
  async showErrorMessage(...args) { record('showErrorMessage', args); return answers.error.shift(); },
  async showInformationMessage(...args) { record('showInformationMessage', args); return answers.info.shift(); },
  async showInputBox(opts) { record('showInputBox', [opts]); return answers.input.length ? answers.input.shift() : opts.value; },
  async showQuickPick(items, opts) { record('showQuickPick', [items, opts]); const a = answers.pick.shift(); return typeof a === 'function' ? a(items) : a; },
  async withProgress(opts, task) {
    record('withProgress', [opts]);
    const src = new CancellationTokenSource();
    const p = task({ report(v) { record('progress', [v]); } }, src.token);
    if (answers.cancelProgress.shift()) setImmediate(src.cancel);
    return p;
  },
  async showTextDocument(doc, opts) { record('showTextDocument', [doc, opts]); return {}; },
  createTreeView(id, opts) { record('createTreeView', [id]); return { dispose() {} }; },
  createOutputChannel(name) { return { appendLine() {}, dispose() {} }; },
};

const workspace = {
  workspaceFolders: undefined,
  registerTextDocumentContentProvider(scheme, p) { providers.set(scheme, p); return { dispose() { providers.delete(scheme); } }; },
  async openTextDocument(arg) {
    record('openTextDocument', [arg]);
    if (arg instanceof Uri) {
      const p = providers.get(arg.scheme);
      const text = p ? await p.provideTextDocumentContent(arg) : undefined;
      if (text === undefined && arg.scheme !== 'file') throw new Error(`no content provider for ${arg.scheme}`);
      return { uri: arg, getText: () => text };
    }
    return { uri: undefined, getText: () => arg.content };
  },
  asRelativePath(u) { return typeof u === 'string' ? u : u.path.replace(/^.*\//, ''); },
  getConfiguration() { return { get: (_key, fallback) => fallback }; },
};

const vscodeCommands = {
  registerCommand(name, f) {
    if (commands.has(name)) throw new Error(`command ${name} already exists`);
    commands.set(name, f);
    return { dispose() { commands.delete(name); } };
  },
  async executeCommand(name, ...args) {
    record('executeCommand', [name, ...args]);
    const f = commands.get(name);
    return f ? f(...args) : undefined;
  },
};

module.exports = {
  calls, answers, commands, providers, reset,
  EventEmitter, Uri, TreeItem, ThemeIcon, ThemeColor, MarkdownString, Position, Range, Selection,
  TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
  StatusBarAlignment: { Left: 1, Right: 2 },
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  QuickPickItemKind: { Separator: -1, Default: 0 },
  CancellationTokenSource,
  ViewColumn: { Active: -1, Beside: -2, One: 1 },
  window, workspace, commands: vscodeCommands,
  Disposable: class { constructor(f) { this.dispose = f; } },
};
