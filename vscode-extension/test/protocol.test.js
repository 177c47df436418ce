// The extension's protocol layer against the real bcode-ls: the same
// vscode-languageserver-protocol stack VS Code's client uses spawns the
// binary built by `go test ./editors/editorstest` (BCODE_LS), on a real
// git repository whose uncommitted change has a surviving boundary mutant
// (BCODE_FIXTURE_REPO) and a ledger with tasks of it (BCODE_STATE).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');
const rpc = require('vscode-languageserver-protocol/node');
const vscode = require('vscode');
const { BcodeApi } = require('../out/src/api');
const { TasksTree } = require('../out/src/tasksTree');
const { summarize } = require('../out/src/evidenceStatus');
const { contentWithFallback } = require('../out/src/content');

const env = process.env;
const skip = !env.BCODE_LS && 'BCODE_LS is not set: run these through `go test ./editors/editorstest`, which builds bcode-ls and the fixture';

test('the real bcode-ls serves the extension', { skip, timeout: 120_000 }, async (t) => {
  const repo = env.BCODE_FIXTURE_REPO;
  const proc = spawn(env.BCODE_LS, ['--stdio', '--debounce', '100ms'], { cwd: repo, env: { ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (b) => { stderr += b; });
  const conn = rpc.createProtocolConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  const diagnostics = new Map();
  const diagWaiters = [];
  const shown = [];
  const changed = [];
  const progress = [];
  conn.onNotification('textDocument/publishDiagnostics', (p) => {
    diagnostics.set(p.uri, p.diagnostics);
    for (const w of diagWaiters.splice(0)) w();
  });
  conn.onNotification('bcode/taskChanged', (c) => changed.push(c));
  conn.onNotification('$/progress', (p) => progress.push(p.value.kind));
  conn.onNotification('window/showMessage', () => {});
  conn.onNotification('window/logMessage', () => {});
  conn.onRequest('window/workDoneProgress/create', () => null);
  conn.onRequest('window/showDocument', (p) => { shown.push(p.uri); return { success: true }; });
  conn.listen();
  proc.stdin.on('error', () => {}); // the server may exit before our last write
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  t.after(async () => {
    try {
      await conn.sendRequest('shutdown');
      await conn.sendNotification('exit');
    } catch { /* already gone */ }
    // bcode-ls does not exit on `exit` (nor on SIGTERM) while its stdin stays
    // open: close our end as editors do when they stop a server.
    proc.stdin.end();
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 5000))]);
    conn.dispose();
    if (code === 'timeout') {
      proc.kill('SIGKILL');
      t.diagnostic('bcode-ls did not exit within 5s of exit and EOF on stdin; killed it');
    }
  });
  const failWith = (what) => `${what}\nbcode-ls stderr:\n${stderr.slice(-3000)}`;

  const root = pathToFileURL(fs.realpathSync(repo)).toString();
  const init = await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: root,
    workspaceFolders: [{ uri: root, name: 'quota' }],
    clientInfo: { name: 'bcode-vscode-protocol-test' },
    capabilities: {
      window: { workDoneProgress: true, showDocument: { support: true } },
      workspace: { textDocumentContent: { dynamicRegistration: false } },
      textDocument: { publishDiagnostics: { relatedInformation: true }, codeAction: { dataSupport: true } },
    },
  });
  conn.sendNotification('initialized', {});
  assert.equal(init.serverInfo.name, 'bcode-ls');
  for (const c of ['bcode.task.create', 'bcode.task.run', 'bcode.task.resume', 'bcode.task.cancel', 'bcode.task.accept', 'bcode.task.reject', 'bcode.pack.preview', 'bcode.evidence.run']) {
    assert.ok(init.capabilities.executeCommandProvider.commands.includes(c), `server lacks command ${c}`);
  }
  assert.ok(init.capabilities.workspace.textDocumentContent.schemes.includes('bcode-pack'));

  const file = path.join(fs.realpathSync(repo), 'quota', 'quota.go');
  const uri = pathToFileURL(file).toString();
  const text = fs.readFileSync(file, 'utf8');
  conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'go', version: 1, text } });

  const api = new BcodeApi(conn);
  // Evidence: what the status-bar item and the diagnostics show.
  const started = Date.now();
  const run = await api.runEvidence();
  assert.ok(run.run >= 1);
  const report = await api.evidence(true);
  assert.equal(report.state, 'done', failWith(`evidence run: ${JSON.stringify(report.error)}`));
  const survivors = report.mutants.filter((m) => m.verdict === 'survived');
  assert.ok(survivors.some((m) => m.original === 'n <= limit' && m.mutated === 'n < limit'), failWith(`no surviving <= → < mutant in ${JSON.stringify(report.mutants.map((m) => [m.original, m.mutated, m.verdict]))}`));
  const bar = summarize(report);
  assert.equal(bar.text, `$(bug) ${survivors.length} ${survivors.length === 1 ? 'mutant survives' : 'mutants survive'}`);
  t.diagnostic(`evidence run to report: ${Date.now() - started} ms, ${report.mutants.length} mutants, ${survivors.length} survived`);

  while (!(diagnostics.get(uri) || []).some((d) => d.source === 'bcode')) {
    await new Promise((resolve, reject) => { diagWaiters.push(resolve); setTimeout(() => reject(new Error(failWith('no bcode diagnostics within 30s'))), 30_000).unref(); });
  }
  const ds = diagnostics.get(uri).filter((d) => d.source === 'bcode');
  const line = text.split('\n').findIndex((l) => l.includes('n <= limit'));
  const col = text.split('\n')[line].indexOf('n <= limit');
  const boundary = ds.find((d) => d.range.start.line === line && d.range.start.character === col);
  assert.ok(boundary, `no diagnostic on n <= limit at ${line}:${col}: ${JSON.stringify(ds)}`);
  assert.equal(boundary.severity, 2);
  assert.equal(boundary.range.end.character, col + 'n <= limit'.length);
  assert.equal(typeof boundary.code, 'string');
  assert.equal(typeof boundary.data, 'string', 'data is the mutant ID');
  assert.ok(survivors.some((m) => m.id === boundary.data));
  assert.match(boundary.message, /`n <= limit` → `n < limit`/);
  assert.ok(progress.includes('begin') && progress.includes('end'), `progress ${progress}`);

  // Code actions on the diagnostic, as VS Code asks for them.
  const actions = await conn.sendRequest('textDocument/codeAction', { textDocument: { uri }, range: boundary.range, context: { diagnostics: [boundary] } });
  const titles = actions.map((a) => a.title);
  assert.ok(titles.includes('bcode: Show mutant diff'), titles.join(', '));
  assert.ok(titles.includes('bcode: Add a test for this boundary'));
  assert.ok(titles.includes('bcode: Preview context pack'));
  const addTest = actions.find((a) => a.title === 'bcode: Add a test for this boundary');
  assert.equal(addTest.command.command, 'bcode.task.create');
  assert.equal(addTest.command.arguments[0].mutantId, boundary.data);

  // The Tasks view over the real server: the seeded ledger's tasks.
  const tree = new TasksTree(api);
  const roots = await tree.getChildren();
  const byId = new Map(roots.map((n) => [n.task.id, n]));
  assert.equal(roots.length, 3, JSON.stringify(roots));
  const verified = tree.getTreeItem(byId.get(env.BCODE_FIXTURE_VERIFIED));
  assert.equal(verified.contextValue, 'bcodeTask status=verified +accept +reject');
  assert.match(verified.description, /^verified · check\.finished /);
  assert.equal(tree.getTreeItem(byId.get(env.BCODE_FIXTURE_FAILED)).contextValue, 'bcodeTask status=failed +reject +resume');
  assert.match(tree.getTreeItem(byId.get(env.BCODE_FIXTURE_RUNNING)).contextValue, /\+cancel/);
  const [files, events] = await tree.getChildren(byId.get(env.BCODE_FIXTURE_VERIFIED));
  const changedFiles = (await tree.getChildren(files)).map((n) => `${n.file.status} ${n.file.path}`);
  assert.deepEqual(changedFiles, ['A quota/boundary_test.go', 'M quota/quota.go', 'A quota/quota_test.go']);
  assert.deepEqual((await tree.getChildren(events)).map((n) => n.label), ['check.finished', 'attempt.started', 'task.created']);

  // Live updates: an event appended by another process (a runner, the CLI)
  // reaches the view through bcode/taskChanged.
  if (env.BCODE_APPEND_EVENT_CMD) {
    const [cmd, ...args] = JSON.parse(env.BCODE_APPEND_EVENT_CMD);
    execFileSync(cmd, args, { env: { ...env, BCODE_HELPER_APPEND_TASK: env.BCODE_FIXTURE_FAILED, BCODE_HELPER_APPEND_KIND: 'attempt.started' } });
    const deadline = Date.now() + 15_000;
    while (!changed.some((c) => c.id === env.BCODE_FIXTURE_FAILED) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const c = changed.find((x) => x.id === env.BCODE_FIXTURE_FAILED);
    assert.ok(c, failWith('no bcode/taskChanged within 15s of a ledger event'));
    assert.equal(c.event, 'attempt.started');
    tree.taskChanged(c);
    assert.match(tree.getTreeItem({ kind: 'task', task: tree.task(env.BCODE_FIXTURE_FAILED) }).description, /attempt\.started 0s ago$/);
  } else {
    t.diagnostic('BCODE_APPEND_EVENT_CMD not set: live bcode/taskChanged not checked');
  }

  // Lifecycle commands: landed, or refused with the server's reason (this
  // bcode-ls build may not have the task engine yet) — never a fake result.
  try {
    const r = await api.rejectTask(env.BCODE_FIXTURE_FAILED);
    assert.equal(r.status, 'rejected');
  } catch (e) {
    assert.match(e.message, /task engine/, `unexpected error: ${e.message}`);
  }
  await assert.rejects(api.acceptTask('no-such-task'), /not found|no such|list the workspace's tasks/);

  // The context-pack preview: window/showDocument on a bcode-pack: URI,
  // served by workspace/textDocumentContent and by the plain request.
  const preview = await api.previewPack({ uri, range: boundary.range });
  assert.match(preview.uri, /^bcode-pack:/);
  assert.ok(shown.includes(preview.uri), `showDocument ${shown}`);
  assert.equal(preview.shown, true);
  const viaLsp = await conn.sendRequest('workspace/textDocumentContent', { uri: preview.uri });
  assert.equal(viaLsp.text, preview.text);
  assert.match(preview.text, /quota\.go/);
  assert.equal(await api.documentContent(preview.uri), preview.text);
  const fallback = await contentWithFallback(preview.uri, () => Promise.reject(new Error('client without 3.18')), (u) => api.documentContent(u));
  assert.equal(fallback, preview.text);
  void vscode; // the stub is loaded for the tree's TreeItem
});
