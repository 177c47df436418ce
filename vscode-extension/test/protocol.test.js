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
const { registerCommands } = require('../out/src/commands');
const { EvidenceStatus } = require('../out/src/statusBar');
const { TaskDiffProvider, taskDiffScheme } = require('../out/src/virtualDocs');

// git runs in the fixture checkout, for the test's own assertions only.
function git(repo, ...args) {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: repo, encoding: 'utf8' }).trim();
}

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
  assert.equal(typeof boundary.data, 'object', 'data is the mutant as data');
  assert.equal(boundary.data.verdict, 'survived');
  assert.ok(Array.isArray(boundary.data.tests) && boundary.data.tests.every((t) => typeof t.name === 'string'), `data.tests: ${JSON.stringify(boundary.data)}`);
  assert.ok(survivors.some((m) => m.id === boundary.data.id));
  assert.match(boundary.message, /`n <= limit` → `n < limit`/);
  assert.ok(progress.includes('begin') && progress.includes('end'), `progress ${progress}`);

  // Code actions on the diagnostic, as VS Code asks for them.
  const actions = await conn.sendRequest('textDocument/codeAction', { textDocument: { uri }, range: boundary.range, context: { diagnostics: [boundary] } });
  const titles = actions.map((a) => a.title);
  // Each mutant action names its mutant, so two on one line differ.
  assert.ok(titles.includes('bcode: Show mutant diff: `n <= limit` → `n < limit`'), titles.join(', '));
  assert.ok(titles.includes('bcode: Add a test for this boundary: `n <= limit` → `n < limit`'), titles.join(', '));
  assert.ok(titles.includes('bcode: Preview context pack'));
  const addTest = actions.find((a) => a.title.startsWith('bcode: Add a test for this boundary'));
  assert.equal(addTest.command.command, 'bcode.task.create');
  assert.equal(addTest.command.arguments[0].mutantId, boundary.data.id);
  assert.equal(addTest.command.arguments[0].run, true, 'Add a test starts the task');
  // At most three quick fixes on the line: the diff, the test and one
  // entry listing every mutant's actions (the extension's quick pick).
  const fixes = actions.filter((a) => a.kind === 'quickfix');
  assert.ok(fixes.length <= 3, `${fixes.length} quick fixes on one line: ${fixes.map((a) => a.title).join(', ')}`);
  const all = fixes.find((a) => a.command && a.command.command === 'bcode.mutant.actions');
  assert.ok(all, `no "Show all surviving mutants on this line" among ${titles.join(', ')}`);
  assert.match(all.title, /^bcode: Show all surviving mutants on this line \(\d+ (mutants, \d+ )?actions\)$/);
  const line1 = await api.mutantActions(all.command.arguments[0].uri, all.command.arguments[0].line);
  assert.equal(line1.line, line);
  const listed = line1.mutants.flatMap((m) => m.actions);
  const ignore = listed.find((a) => a.title.startsWith('bcode: Ignore this mutant'));
  assert.ok(ignore && ignore.edit && ignore.edit.changes[uri], 'the ignore quick fix carries its edit');
  assert.match(ignore.edit.changes[uri][0].newText, /^\s*\/\/bcode:ignore-mutant \n$/);

  // Requests with no params at all, null and [] (which vscode-jsonrpc sends
  // by position, as [null] and [[]]): each is "no params".
  for (const params of [undefined, null, []]) {
    const r = params === undefined ? await conn.sendRequest('bcode/tasks') : await conn.sendRequest('bcode/tasks', params);
    assert.equal(r.tasks.length, 3, `bcode/tasks with params ${JSON.stringify(params)}`);
  }
  // A bad field is named, in the message and in data.field.
  await assert.rejects(conn.sendRequest('bcode/task', { id: env.BCODE_FIXTURE_VERIFIED, eventsLimit: 'all' }), (e) => {
    assert.equal(e.code, -32602);
    assert.match(e.message, /^bcode\/task: eventsLimit must be an integer, got a string/);
    assert.deepEqual(e.data, { field: 'eventsLimit' });
    return true;
  });
  // eventsLimit: the newest events, oldest first.
  const newest = await api.task(env.BCODE_FIXTURE_VERIFIED, 2);
  assert.deepEqual(newest.events.map((e) => e.kind), ['attempt.finished', 'task.verified']);
  assert.equal(newest.eventsOmitted, 4);

  // The Tasks view over the real server: the seeded ledger's tasks.
  const tree = new TasksTree(api);
  const roots = await tree.getChildren();
  const byId = new Map(roots.map((n) => [n.task.id, n]));
  assert.equal(roots.length, 3, JSON.stringify(roots));
  const verified = tree.getTreeItem(byId.get(env.BCODE_FIXTURE_VERIFIED));
  assert.equal(verified.contextValue, 'bcodeTask status=verified +accept +reject');
  assert.match(verified.description, /^verified · task\.verified /);
  assert.equal(tree.getTreeItem(byId.get(env.BCODE_FIXTURE_FAILED)).contextValue, 'bcodeTask status=failed +reject +resume');
  assert.match(tree.getTreeItem(byId.get(env.BCODE_FIXTURE_RUNNING)).contextValue, /\+cancel/);
  const [files, events] = await tree.getChildren(byId.get(env.BCODE_FIXTURE_VERIFIED));
  const fileNodes = await tree.getChildren(files);
  assert.deepEqual(fileNodes.map((n) => `${n.file.status} ${n.file.path}`), ['A quota/boundary_test.go', 'M quota/quota.go', 'A quota/quota_test.go']);
  assert.deepEqual((await tree.getChildren(events)).map((n) => n.label), ['task.verified', 'attempt.finished', 'check.finished', 'turn.finished', 'attempt.started', 'task.created']);

  // The task's diff comes from bcode-ls (bcode/taskDiff): both sides of
  // each file as git has them, served read-only to VS Code's diff editor.
  const diff = await api.taskDiff(env.BCODE_FIXTURE_VERIFIED);
  assert.equal(diff.head, env.BCODE_FIXTURE_VERIFIED_HEAD);
  assert.equal(diff.base, env.BCODE_FIXTURE_BASE);
  assert.match(diff.diff, /^diff --git a\/quota\/boundary_test\.go b\/quota\/boundary_test\.go\n/);
  assert.match(diff.diff, /\n\+\tif n <= limit \{\n/);
  const provider = new TaskDiffProvider(tree.diffs);
  const quota = fileNodes.find((n) => n.file.path === 'quota/quota.go');
  const side = (s, p) => vscode.Uri.from({ scheme: taskDiffScheme, path: `/${env.BCODE_FIXTURE_VERIFIED}/${s}/${p}` });
  assert.equal(await provider.provideTextDocumentContent(side('base', 'quota/quota.go')), git(repo, 'show', `${env.BCODE_FIXTURE_BASE}:quota/quota.go`) + '\n');
  assert.equal(await provider.provideTextDocumentContent(side('head', 'quota/quota.go')), git(repo, 'show', `${env.BCODE_FIXTURE_VERIFIED_HEAD}:quota/quota.go`) + '\n');
  assert.equal(await provider.provideTextDocumentContent(side('base', 'quota/boundary_test.go')), '', 'an added file has no base side');
  assert.equal(quota.file.baseSize, Buffer.byteLength(quota.file.baseContent));
  const onePath = await api.taskDiff(env.BCODE_FIXTURE_VERIFIED, 'quota/quota.go');
  assert.deepEqual(onePath.files.map((f) => f.path), ['quota/quota.go']);

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
    assert.equal(c.kind, 'attempt.started');
    // The event's own time, RFC 3339, from the ledger (the helper appended
    // it just now); the tree shows it.
    assert.match(c.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
    assert.ok(Math.abs(Date.now() - Date.parse(c.at)) < 60_000, `at ${c.at} is not the time of the event`);
    const last = (await api.task(env.BCODE_FIXTURE_FAILED, 1)).events[0];
    assert.equal(Date.parse(c.at), Date.parse(last.at), 'at is the ledger event\'s time');
    assert.equal(c.seq, last.seq);
    tree.taskChanged(c);
    assert.equal(tree.task(env.BCODE_FIXTURE_FAILED).lastEvent.at, c.at);
    assert.match(tree.getTreeItem({ kind: 'task', task: tree.task(env.BCODE_FIXTURE_FAILED) }).description, /attempt started \d+s ago$/, 'the row says what the event was, as bcode-ls summarises it');
  } else {
    t.diagnostic('BCODE_APPEND_EVENT_CMD not set: live bcode/taskChanged not checked');
  }

  // Reject through the real server: the failed task's branch goes, main
  // stays where it was.
  const mainBefore = git(repo, 'rev-parse', 'main');
  assert.equal(mainBefore, env.BCODE_FIXTURE_BASE);
  assert.equal(git(repo, 'rev-parse', `bcode/${env.BCODE_FIXTURE_FAILED}`), env.BCODE_FIXTURE_FAILED_HEAD);
  const rejected = await api.rejectTask(env.BCODE_FIXTURE_FAILED);
  assert.equal(rejected.status, 'rejected');
  assert.equal(git(repo, 'rev-parse', 'main'), mainBefore, 'reject moved main');
  assert.equal(git(repo, 'branch', '--list', `bcode/${env.BCODE_FIXTURE_FAILED}`), '', 'the rejected branch is still there');
  assert.equal(git(repo, 'show', 'main:quota/quota.go'), git(repo, 'show', `${env.BCODE_FIXTURE_BASE}:quota/quota.go`));
  await assert.rejects(api.acceptTask('no-such-task'), /not found|no such|list the workspace's tasks/);

  // Accept through the extension's own command, as the Tasks view's inline
  // button runs it, against the real bcode-ls.
  const commands = registerCommands({ api: () => api, tree, status: new EvidenceStatus(), problem: () => undefined });
  t.after(() => commands.forEach((c) => c.dispose()));
  await tree.getChildren();
  const verifiedNode = { kind: 'task', task: tree.task(env.BCODE_FIXTURE_VERIFIED) };
  // While the user's change is uncommitted: the dialog says bcode would
  // refuse, offers no Accept, and the server refuses too; nothing moves.
  vscode.reset();
  await vscode.commands.executeCommand('bcode.tasks.accept', verifiedNode);
  const refused = vscode.calls.find((c) => c.kind === 'showErrorMessage');
  assert.ok(refused, 'no refusal dialog for a dirty checkout');
  assert.match(refused.args[1].detail, /uncommitted changes/);
  await assert.rejects(api.acceptTask(env.BCODE_FIXTURE_VERIFIED), /uncommitted changes/);
  assert.equal(git(repo, 'rev-parse', 'main'), mainBefore, 'a refused accept moved main');
  // The user sets the change aside; now Accept asks, and lands the task.
  git(repo, 'stash', 'push', '-q', '-u');
  // A digest of a change other than the task's (one the user did not
  // see) is refused by the server, and nothing moves.
  await assert.rejects(api.acceptTask(env.BCODE_FIXTURE_VERIFIED, 'sha256:' + '0'.repeat(64)), /not the one you reviewed/);
  assert.equal(git(repo, 'rev-parse', 'main'), mainBefore, 'an accept with a stale digest moved main');
  const shownDigest = (await tree.diffs.task(env.BCODE_FIXTURE_VERIFIED)).digest;
  assert.match(shownDigest, /^sha256:[0-9a-f]{64}$/);
  vscode.reset();
  vscode.answers.warning.push('Accept');
  await vscode.commands.executeCommand('bcode.tasks.accept', verifiedNode);
  const asked = vscode.calls.find((c) => c.kind === 'showWarningMessage');
  assert.ok(asked, failWith(`no confirmation: ${JSON.stringify(vscode.calls.map((c) => [c.kind, c.args[0]]))}`));
  assert.match(asked.args[1].detail, new RegExp(`your current branch main will be fast-forwarded to bcode/${env.BCODE_FIXTURE_VERIFIED} \\(1 commit\\)`));
  // The dialog names the change shown (the digest accept passes).
  assert.ok(asked.args[1].detail.includes(`Change ${shownDigest}`), `the dialog does not name ${shownDigest}: ${asked.args[1].detail}`);
  const told = vscode.calls.find((c) => c.kind === 'showInformationMessage');
  assert.ok(told, failWith(`no result: ${JSON.stringify(vscode.calls.map((c) => [c.kind, c.args[0]]))}`));
  assert.equal(told.args[0], `bcode: task ${env.BCODE_FIXTURE_VERIFIED} is accepted`);
  // git really moved: main is the task's verified head, with its files.
  assert.equal(git(repo, 'rev-parse', 'main'), env.BCODE_FIXTURE_VERIFIED_HEAD);
  assert.equal(git(repo, 'show', 'main:quota/boundary_test.go'), git(repo, 'show', `${env.BCODE_FIXTURE_VERIFIED_HEAD}:quota/boundary_test.go`));
  assert.match(fs.readFileSync(path.join(repo, 'quota', 'boundary_test.go'), 'utf8'), /func TestAllowedAtTheLimit/);
  assert.equal(git(repo, 'status', '--porcelain'), '', 'the checkout is clean after a fast-forward');
  const after = await api.task(env.BCODE_FIXTURE_VERIFIED);
  assert.equal(after.task.status, 'accepted');
  assert.equal(after.events[after.events.length - 1].kind, 'task.accepted');
  assert.equal(after.events[after.events.length - 1].data.method, 'fast-forward');
  const deadline = Date.now() + 10_000;
  while (!changed.some((c) => c.id === env.BCODE_FIXTURE_VERIFIED && c.kind === 'task.accepted') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.ok(changed.some((c) => c.id === env.BCODE_FIXTURE_VERIFIED && c.status === 'accepted' && c.kind === 'task.accepted' && c.at), 'no bcode/taskChanged for the accept');
  // A second accept is refused: nothing moves again.
  await assert.rejects(api.acceptTask(env.BCODE_FIXTURE_VERIFIED), /already accepted/);
  assert.equal(git(repo, 'rev-parse', 'main'), env.BCODE_FIXTURE_VERIFIED_HEAD);

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
