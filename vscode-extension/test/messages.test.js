// What the user is told, once per outcome, against the vscode stub: the
// status bar's start, Preview Context Pack's cancellable progress and its
// refusal off a file, a started task's closing progress (never a success
// toast beside the server's "could not start"), and the check report's
// text table.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { BcodeApi } = require('../out/src/api');
const { TasksTree } = require('../out/src/tasksTree');
const { registerCommands, fileEditor } = require('../out/src/commands');
const { EvidenceStatus } = require('../out/src/statusBar');
const { announceStart, taskStartSeen, startSettled } = require('../out/src/taskStart');
const { checkTable, checkSummary } = require('../out/src/checkReport');

const toasts = () => vscode.calls.filter((c) => /^show(Information|Warning|Error)Message$/.test(c.kind));

// hanging is a server that never answers bcode.pack.preview, recording
// the token each request came with.
function hanging() {
  const sent = [];
  return {
    sent,
    sendRequest(method, params, token) {
      sent.push({ method, params, token });
      if (params && params.command === 'bcode.pack.preview') return new Promise(() => {});
      if (params && params.command === 'bcode.task.create') return Promise.resolve({ id: 'n1', status: 'running', message: 'created and started' });
      return Promise.resolve({});
    },
  };
}

function setup() {
  vscode.reset();
  const server = hanging();
  const api = new BcodeApi(server);
  const tree = new TasksTree(api);
  const status = new EvidenceStatus();
  const ds = registerCommands({ api: () => api, tree, status, problem: () => undefined });
  return { server, status, dispose: () => ds.forEach((d) => d.dispose()) };
}

function editorOn(uri) {
  vscode.window.activeTextEditor = {
    document: { uri, lineAt: () => ({ text: 'x := 1' }) },
    selection: new vscode.Selection(new vscode.Position(0, 0), new vscode.Position(0, 6)),
  };
}

test('the status bar says starting from the first moment, not server off', () => {
  vscode.reset();
  const s = new EvidenceStatus();
  assert.equal(s.item.text, '$(sync~spin) bcode: starting…');
  assert.equal(s.showsEvidence, false);
  s.show(undefined);
  assert.equal(s.showsEvidence, true);
  s.unavailable('gone');
  assert.equal(s.item.text, '$(error) bcode: server off');
});

test('Preview Context Pack shows cancellable progress; Cancel cancels the request and says nothing more', async (t) => {
  const s = setup();
  t.after(s.dispose);
  t.after(() => { vscode.window.activeTextEditor = undefined; });
  editorOn(vscode.Uri.file('/repo/a.go'));
  vscode.answers.cancelProgress.push(true);
  await vscode.commands.executeCommand('bcode.previewPack');
  const progress = vscode.calls.find((c) => c.kind === 'withProgress').args[0];
  assert.equal(progress.cancellable, true);
  assert.equal(progress.location, vscode.ProgressLocation.Notification);
  assert.match(progress.title, /^bcode: building the context pack for a\.go…$/);
  const req = s.server.sent.find((x) => x.params && x.params.command === 'bcode.pack.preview');
  assert.ok(req.token && req.token.isCancellationRequested, 'the request got the progress token, cancelled ($/cancelRequest)');
  assert.deepEqual(toasts(), [], 'a cancel is not an error');
  assert.equal(vscode.calls.filter((c) => c.kind === 'openTextDocument').length, 0);
});

test('commands that need a file refuse an untitled buffer or a git view, saying why', async (t) => {
  const s = setup();
  t.after(s.dispose);
  t.after(() => { vscode.window.activeTextEditor = undefined; });
  for (const [uri, says] of [
    [new vscode.Uri('untitled', '', 'Untitled-1'), /this editor shows an untitled buffer, not saved to a file\. Open the file itself/],
    [new vscode.Uri('git', '', '/repo/a.go', '{"ref":"HEAD"}'), /this editor shows a git view of a file \(a diff side or an old version\)/],
    [new vscode.Uri('output', '', 'bcode'), /this editor shows a output: document, not a file on disk/],
  ]) {
    vscode.reset();
    editorOn(uri);
    await vscode.commands.executeCommand('bcode.previewPack');
    await vscode.commands.executeCommand('bcode.createTask');
    const errs = toasts();
    assert.equal(errs.length, 2, `one message per command for ${uri.scheme}: ${JSON.stringify(errs.map((c) => c.args[0]))}`);
    assert.match(errs[0].args[0], /^bcode: Preview Context Pack works on files of the workspace; /);
    assert.match(errs[0].args[0], says);
    assert.match(errs[1].args[0], /^bcode: Create Task from Selection works on files of the workspace; /);
  }
  assert.equal(s.server.sent.length, 0, 'nothing was sent for a non-file document');
  vscode.window.activeTextEditor = undefined;
  assert.throws(() => fileEditor('X'), /X needs a file of the workspace: open one in the editor first/);
});

test('a created task is one closing progress, not a success toast beside a later error', async (t) => {
  const s = setup();
  t.after(s.dispose);
  t.after(() => { vscode.window.activeTextEditor = undefined; });
  editorOn(vscode.Uri.file('/repo/a.go'));
  vscode.answers.input.push('Make x configurable');
  await vscode.commands.executeCommand('bcode.createTask');
  const p = vscode.calls.find((c) => c.kind === 'withProgress');
  assert.ok(p, 'a progress notification');
  assert.equal(p.args[0].title, 'bcode: task n1 created, starting its run…');
  assert.equal(p.args[0].cancellable, undefined);
  assert.deepEqual(toasts(), [], 'no "created and started" toast that a start failure would contradict');
  // It closes on the run's first attempt or its start failure, not on task.started.
  assert.equal(startSettled({ id: 'n1', status: 'running', kind: 'task.started', event: 'task.started' }), false);
  assert.equal(startSettled({ id: 'n1', status: 'running', kind: 'attempt.started', event: 'attempt.started' }), true);
  assert.equal(startSettled({ id: 'n1', status: 'queued', kind: 'task.start_failed', event: 'task.start_failed' }), true);
  taskStartSeen({ id: 'n1', status: 'queued', kind: 'task.start_failed', event: 'task.start_failed' });
  // A server that could not start it says so in its answer: one warning.
  vscode.reset();
  announceStart({ id: 'n2', status: 'queued', message: 'created, not started: no model server' });
  assert.deepEqual(toasts().map((c) => [c.kind, c.args[0]]), [['showWarningMessage', 'bcode: task n2 created, not started: no model server']]);
});

test('the check report reads as a table, and a tampered verdict names what', () => {
  const report = {
    verdict: 'tampered',
    reasons: [{ code: 'tamper', message: 'the change weakens the tests' }],
    tests: [{ name: 'TestAllowedAtTheLimit', base_outcome: 'fail', head_outcome: 'pass', credited: true }, { name: 'TestAllowed', base_outcome: 'pass', head_outcome: 'pass', credited: false, reason_text: 'passes on the base commit too' }],
    tamper: [{ code: 'test_deleted', path: 'quota/quota_test.go', line: 5, message: 'TestAllowed was deleted' }],
  };
  assert.deepEqual(checkTable('tampered', report), [
    'check: tampered with quota/quota_test.go:5: TestAllowed was deleted',
    '  reason tamper: the change weakens the tests',
    '  tampered with:',
    '    test_deleted  quota/quota_test.go:5: TestAllowed was deleted',
    '  test                   base  head  credit',
    '  TestAllowedAtTheLimit  fail  pass  credited',
    '  TestAllowed            pass  pass  passes on the base commit too',
  ]);
  assert.deepEqual(checkSummary('failed', { verdict: 'failed', tests: [] }), { label: 'Check: failed', description: '0 tests' });
  assert.equal(checkSummary('tampered', { verdict: 'tampered', tamper: [] }).label, 'Check: tampered (the report names no finding)');
  assert.deepEqual(checkTable('green', undefined), ['check: green', '  (no report recorded)']);
});
