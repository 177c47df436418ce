// The Tasks view and the extension's commands against the vscode stub: a
// scripted server (recording every request it gets; it answers
// bcode/taskDiff, so the diff never comes from git in the extension) and a
// real git repository for the checkout state the Accept dialog reads.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const vscode = require('vscode');
const { BcodeApi } = require('../out/src/api');
const { TasksTree } = require('../out/src/tasksTree');
const { registerCommands } = require('../out/src/commands');
const { EvidenceStatus } = require('../out/src/statusBar');
const { TaskDiffProvider, EventsProvider, taskDiffScheme, eventsScheme } = require('../out/src/virtualDocs');

function git(dir, ...args) {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: dir, encoding: 'utf8' }).trim();
}

// A repository with a base commit and a task branch that changes one file
// and adds another.
function repo() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bcode-tree-'));
  git(dir, 'init', '-q', '-b', 'main');
  fs.mkdirSync(path.join(dir, 'pkg'));
  fs.writeFileSync(path.join(dir, 'pkg/a.go'), 'package pkg\n\nconst A = 1\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  const base = git(dir, 'rev-parse', 'HEAD');
  git(dir, 'checkout', '-q', '-b', 'bcode/t1');
  fs.writeFileSync(path.join(dir, 'pkg/a.go'), 'package pkg\n\nconst A = 2\n');
  fs.writeFileSync(path.join(dir, 'pkg/a_test.go'), 'package pkg\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'task');
  git(dir, 'checkout', '-q', 'main');
  return { dir, base };
}

// scripted is a RequestSender standing in for bcode-ls.
function scripted(r) {
  const sent = [];
  const tasks = [
    { id: 't1', goal: 'Bump A', status: 'verified', verdict: 'verified', branch: 'bcode/t1', updatedAt: '2025-01-02T10:00:00Z', lastEvent: { seq: 3, kind: 'check.finished', at: '2025-01-02T10:00:00Z' } },
    { id: 't2', goal: 'Other', status: 'failed', verdict: 'unverified', reason: 'the new test passes on the base commit too', branch: 'bcode/t2', updatedAt: '2025-01-02T10:00:00Z' },
  ];
  const detail = (id) => ({
    task: { id, repo: r.dir, goal: 'Bump A', base: r.base, branch: 'bcode/' + id, status: tasks.find((t) => t.id === id).status, created_at: '', updated_at: '' },
    attempts: [{ number: 1, status: 'finished', verdict: 'verified' }],
    events: [{ seq: 1, task_id: id, kind: 'task.created', at: '2025-01-02T09:00:00Z' }, { seq: 3, task_id: id, attempt: 1, kind: 'check.finished', at: '2025-01-02T10:00:00Z', data: { verdict: 'verified' } }],
    // t2's last check found the change tampering with the tests.
    verification: id === 't2' ? {
      verdict: 'tampered', base: r.base, head: 'def4567890',
      report: {
        verdict: 'tampered',
        reasons: [{ code: 'tamper', message: 'the change weakens the tests' }],
        tests: [{ name: 'TestA', file: 'pkg/a_test.go', base_outcome: 'fail', head_outcome: 'pass', credited: true, reason: 'credited', reason_text: 'fails on the base, passes on the head' }],
        tamper: [{ code: 'test_deleted', path: 'pkg/b_test.go', line: 3, message: 'TestB is deleted' }, { code: 'test_skipped', path: 'pkg/a_test.go', message: 'TestC is skipped' }],
      },
    } : undefined,
  });
  // What bcode-ls answers for t1's change: a text file on both sides, an
  // added one, a binary one (named, not sent) and one past the answer's
  // content budget (its contents come when asked for by path).
  const files = [
    { path: 'assets/logo.png', status: 'M', baseSize: 20, headSize: 21, binary: true, omitted: 'binary', note: 'assets/logo.png is a binary file (20 B before, 21 B after)' },
    { path: 'pkg/a.go', status: 'M', baseContent: 'package pkg\n\nconst A = 1\n', headContent: 'package pkg\n\nconst A = 2\n', baseSize: 25, headSize: 25 },
    { path: 'pkg/a_test.go', status: 'A', headContent: 'package pkg\n', baseSize: 0, headSize: 12 },
    { path: 'pkg/z.go', status: 'M', baseSize: 9, headSize: 10, omitted: 'budget', note: 'pkg/z.go comes without its contents' },
  ];
  const taskDiff = ({ id, path }) => {
    if (id !== 't1') return { id, branch: 'bcode/' + id, base: r.base, files: [], diff: '', notes: [`the task's branch bcode/${id} does not exist (status failed): there is nothing to show`] };
    if (path === 'pkg/z.go') return { id, branch: 'bcode/t1', base: r.base, head: 'abc', files: [{ ...files[3], omitted: undefined, note: undefined, baseContent: 'package z', headContent: 'package z\n' }], diff: '' };
    return { id, branch: 'bcode/t1', base: r.base, head: 'abc', digest: t1Digest, files: path ? files.filter((f) => f.path === path) : files, diff: 'diff --git ...' };
  };
  return {
    sent, tasks,
    async sendRequest(method, params) {
      sent.push({ method, params });
      switch (method) {
        case 'bcode/tasks': return { tasks: tasks.map((t) => ({ ...t })) };
        case 'bcode/task': return detail(params.id);
        case 'bcode/taskDiff': return taskDiff(params);
        case 'bcode/evidence': return { run: 1, state: 'done', mutants: [{ id: 'm1', verdict: 'survived' }] };
        case 'workspace/executeCommand': {
          const a = params.arguments[0];
          if (params.command === 'bcode.task.accept') return { id: a.id, status: 'accepted' };
          if (params.command === 'bcode.task.reject') return { id: a.id, status: 'rejected' };
          if (params.command === 'bcode.task.create') return { id: 'new1', status: 'running', message: 'created and started' };
          if (params.command === 'bcode.pack.preview') return { uri: 'bcode-pack:/1/a.go-L1-L3.md', shown: false, text: '# pack' };
          if (params.command === 'bcode.evidence.run') return { run: 2, token: 'tok' };
          return { id: a.id, status: 'running' };
        }
      }
      throw new Error('unexpected ' + method);
    },
  };
}

// The digest bcode-ls gives t1's change: what Accept passes back.
const t1Digest = 'sha256:' + 'ab'.repeat(32);

// One repository for the file: git is slow on a loaded machine.
let shared;
function setup() {
  vscode.reset();
  shared = shared || repo();
  const r = shared;
  const server = scripted(r);
  const api = new BcodeApi(server);
  const tree = new TasksTree(api, () => new Date('2025-01-02T10:05:00Z'));
  const status = new EvidenceStatus();
  const disposables = [
    ...registerCommands({ api: () => api, tree, status, problem: () => undefined }),
    vscode.workspace.registerTextDocumentContentProvider(taskDiffScheme, new TaskDiffProvider(tree.diffs)),
    vscode.workspace.registerTextDocumentContentProvider(eventsScheme, new EventsProvider(() => api)),
  ];
  return { r, server, api, tree, status, dispose: () => disposables.forEach((d) => d.dispose()) };
}

const execs = (name) => vscode.calls.filter((c) => c.kind === 'executeCommand' && c.args[0] === name);

test('the tree lists tasks with their inline actions, changed files and events', async (t) => {
  const s = setup();
  t.after(s.dispose);
  const roots = await s.tree.getChildren();
  assert.deepEqual(roots.map((n) => n.task.id), ['t1', 't2']);
  const item = s.tree.getTreeItem(roots[0]);
  assert.equal(item.label, 'Bump A');
  assert.equal(item.description, 'verified · check.finished 5m ago');
  assert.equal(item.contextValue, 'bcodeTask status=verified +accept +reject');
  assert.equal(item.iconPath.id, 'pass');
  assert.equal(item.command, undefined, 'a click on a task only expands it: opening every diff is in its menu');
  assert.equal(s.tree.getTreeItem(roots[1]).contextValue, 'bcodeTask status=failed +reject +resume');

  const [files, events] = await s.tree.getChildren(roots[0]);
  assert.equal(s.tree.getTreeItem(files).command, undefined);
  const fileNodes = await s.tree.getChildren(files);
  assert.deepEqual(fileNodes.map((n) => `${n.file.status} ${n.file.path}`), ['M assets/logo.png', 'M pkg/a.go', 'A pkg/a_test.go', 'M pkg/z.go']);
  assert.equal(s.tree.getTreeItem(fileNodes[1]).description, 'pkg · modified');
  assert.equal(s.tree.getTreeItem(fileNodes[0]).description, 'assets · modified · binary');
  assert.match(s.tree.getTreeItem(fileNodes[0]).tooltip, /binary file \(20 B before, 21 B after\)/);
  assert.deepEqual(s.server.sent.filter((x) => x.method === 'bcode/taskDiff').map((x) => x.params), [{ id: 't1' }], 'the files come from bcode/taskDiff');
  // One click on a file opens one diff.
  assert.deepEqual(s.tree.getTreeItem(fileNodes[1]).command.arguments, [fileNodes[1]]);
  // A failed task says why, first.
  const [why, failedFiles] = await s.tree.getChildren(roots[1]);
  assert.equal(s.tree.getTreeItem(why).label, 'Why: the new test passes on the base commit too');
  assert.equal(s.tree.getTreeItem(why).iconPath.id, 'error');
  // A task without a branch says why it shows nothing.
  assert.match((await s.tree.getChildren(failedFiles))[0].text, /branch bcode\/t2 does not exist/);
  // Its last check, whatever the verdict: a tampered one names what was
  // tampered with, then the findings and the test table.
  const failedKids = await s.tree.getChildren(roots[1]);
  const check = failedKids[failedKids.length - 1];
  assert.equal(check.kind, 'check');
  const checkItem = s.tree.getTreeItem(check);
  assert.equal(checkItem.label, 'Check: tampered with pkg/b_test.go:3: TestB is deleted (+1 more)');
  assert.equal(checkItem.description, '2 findings · 1 test');
  assert.equal(checkItem.collapsibleState, vscode.TreeItemCollapsibleState.Expanded);
  const rows = (await s.tree.getChildren(check)).map((n) => s.tree.getTreeItem(n));
  assert.deepEqual(rows.map((i) => i.label), ['the change weakens the tests', 'Tampered: pkg/b_test.go:3: TestB is deleted', 'Tampered: pkg/a_test.go: TestC is skipped', 'TestA']);
  assert.equal(rows[3].description, 'base fail → head pass · credited');
  // The verified task has no recorded check: no check node.
  assert.ok((await s.tree.getChildren(roots[0])).every((n) => n.kind !== 'check'));
  const eventNodes = await s.tree.getChildren(events);
  assert.deepEqual(eventNodes.map((n) => n.label), ['check.finished', 'task.created'], 'newest first');
  assert.match(s.tree.getTreeItem(eventNodes[0]).description, /^#3 2025-01-02 10:00:00 · attempt 1$/);
});

test('bcode/taskChanged updates the row live; an unknown task lists again', async (t) => {
  const s = setup();
  t.after(s.dispose);
  let fired = 0;
  s.tree.onDidChangeTreeData(() => fired++);
  await s.tree.getChildren();
  const before = s.server.sent.filter((x) => x.method === 'bcode/tasks').length;
  s.tree.taskChanged({ id: 't2', status: 'running', event: 'task.started', seq: 9 });
  assert.equal(fired, 1);
  const row = s.tree.getTreeItem({ kind: 'task', task: s.tree.task('t2') });
  assert.equal(row.description, 'running · task.started 0s ago');
  assert.equal(row.contextValue, 'bcodeTask status=running +reject +cancel');
  s.tree.taskChanged({ id: 'brand-new', status: 'queued', event: 'task.created' });
  assert.equal(fired, 2);
  await s.tree.getChildren();
  assert.equal(s.server.sent.filter((x) => x.method === 'bcode/tasks').length, before + 1);
});

test('opening a task shows each changed file in the diff editor, from bcode/taskDiff, and its events', async (t) => {
  const s = setup();
  t.after(s.dispose);
  const [node] = await s.tree.getChildren();
  await vscode.commands.executeCommand('bcode.tasks.open', node);
  const diffs = execs('vscode.diff');
  assert.equal(diffs.length, 4, 'one diff per changed file');
  const byPath = new Map(diffs.map((d) => [d.args[1].path.replace(/^\/t1\/base\//, ''), d.args.slice(1)]));
  const [left, right, title] = byPath.get('pkg/a.go');
  assert.equal(left.scheme, 'bcode-taskdiff');
  assert.equal(left.path, '/t1/base/pkg/a.go', 'the URI ends with the file name, so the editor knows its language');
  assert.equal(right.path, '/t1/head/pkg/a.go');
  assert.equal(title, `pkg/a.go (${s.r.base.slice(0, 7)} ↔ bcode/t1)`);
  const p = vscode.providers.get('bcode-taskdiff');
  assert.equal(await p.provideTextDocumentContent(left), 'package pkg\n\nconst A = 1\n');
  assert.equal(await p.provideTextDocumentContent(right), 'package pkg\n\nconst A = 2\n');
  assert.equal(await p.provideTextDocumentContent(byPath.get('pkg/a_test.go')[0]), '', 'an added file is empty on the base side');
  assert.equal(await p.provideTextDocumentContent(byPath.get('pkg/a_test.go')[1]), 'package pkg\n');
  // Binary: both sides say so, with their sizes; no bytes are sent.
  assert.equal(await p.provideTextDocumentContent(byPath.get('assets/logo.png')[0]), 'bcode: not shown here: assets/logo.png is a binary file (20 B before, 21 B after)\nbase side: 20 B\n');
  assert.match(await p.provideTextDocumentContent(byPath.get('assets/logo.png')[1]), /task branch side: 21 B\n$/);
  // Past the budget: asked for by path, once for both sides.
  assert.equal(await p.provideTextDocumentContent(byPath.get('pkg/z.go')[1]), 'package z\n');
  assert.equal(await p.provideTextDocumentContent(byPath.get('pkg/z.go')[0]), 'package z');
  const asked = s.server.sent.filter((x) => x.method === 'bcode/taskDiff').map((x) => x.params);
  assert.deepEqual(asked, [{ id: 't1' }, { id: 't1', path: 'pkg/z.go' }], 'one request for the task, one for the file past the budget');
  // A change to the task drops what was cached.
  s.tree.taskChanged({ id: 't1', status: 'accepted', kind: 'task.accepted', event: 'task.accepted', at: '2025-01-02T10:04:00Z' });
  await p.provideTextDocumentContent(right);
  assert.equal(s.server.sent.filter((x) => x.method === 'bcode/taskDiff').length, 3);
  const shown = vscode.calls.filter((c) => c.kind === 'showTextDocument').map((c) => c.args[0]);
  assert.equal(shown.length, 1);
  assert.equal(shown[0].uri.scheme, 'bcode-task');
  assert.match(shown[0].getText(), /#3 {2}2025-01-02T10:00:00Z {2}attempt 1 {2}check\.finished \{"verdict":"verified"\}/);
});

test('Accept asks first, says what happens to the branch, and only then lands the task', async (t) => {
  const s = setup();
  t.after(s.dispose);
  const [node] = await s.tree.getChildren();
  const accepts = () => s.server.sent.filter((x) => x.params && x.params.command === 'bcode.task.accept');

  vscode.answers.warning.push(undefined); // the user closes the dialog
  await vscode.commands.executeCommand('bcode.tasks.accept', node);
  assert.equal(accepts().length, 0, 'nothing happens without a yes');
  const ask = vscode.calls.find((c) => c.kind === 'showWarningMessage');
  assert.equal(ask.args[0], 'Accept task t1?');
  assert.equal(ask.args[1].modal, true);
  assert.match(ask.args[1].detail, /your current branch main will be fast-forwarded to bcode\/t1 \(1 commit\)/);
  assert.ok(ask.args[1].detail.endsWith(`\n\nChange ${t1Digest}`), 'the dialog names the change shown');
  assert.equal(ask.args[2], 'Accept');

  vscode.answers.warning.push('Accept');
  await vscode.commands.executeCommand('bcode.tasks.accept', node);
  assert.deepEqual(accepts().map((x) => x.params.arguments), [[{ id: 't1', digest: t1Digest }]], 'accept passes the digest of the change shown');
  assert.ok(vscode.calls.some((c) => c.kind === 'showInformationMessage' && /task t1 is accepted/.test(c.args[0])));

  // A dirty checkout: bcode would refuse, so the dialog says so and offers no Accept.
  fs.writeFileSync(path.join(s.r.dir, 'pkg/a.go'), 'package pkg\n// edited\n');
  t.after(() => git(s.r.dir, 'checkout', '--', 'pkg/a.go'));
  vscode.reset();
  await vscode.commands.executeCommand('bcode.tasks.accept', node);
  const err = vscode.calls.find((c) => c.kind === 'showErrorMessage');
  assert.match(err.args[1].detail, /uncommitted changes/);
  assert.equal(err.args.length, 2, 'no Accept button');
  assert.equal(accepts().length, 1);
});

test('Accept on a task that is not verified is refused with a reason', async (t) => {
  const s = setup();
  t.after(s.dispose);
  const roots = await s.tree.getChildren();
  await vscode.commands.executeCommand('bcode.tasks.accept', roots[1]);
  const err = vscode.calls.find((c) => c.kind === 'showErrorMessage');
  assert.match(err.args[0], /task t2 is failed, not verified/);
});

test('Reject confirms; Resume and Cancel send their commands', async (t) => {
  const s = setup();
  t.after(s.dispose);
  const roots = await s.tree.getChildren();
  vscode.answers.warning.push('Reject');
  await vscode.commands.executeCommand('bcode.tasks.reject', roots[1]);
  await vscode.commands.executeCommand('bcode.tasks.resume', roots[1]);
  await vscode.commands.executeCommand('bcode.tasks.cancel', 't1');
  const cmds = s.server.sent.filter((x) => x.method === 'workspace/executeCommand').map((x) => [x.params.command, x.params.arguments[0].id]);
  assert.deepEqual(cmds, [['bcode.task.reject', 't2'], ['bcode.task.resume', 't2'], ['bcode.task.cancel', 't1']]);
  assert.match(vscode.calls.find((c) => c.kind === 'showWarningMessage').args[1].detail, /your branch is not touched/);
});

test('Create task sends the selection; preview and evidence use the server', async (t) => {
  const s = setup();
  t.after(s.dispose);
  const file = vscode.Uri.file(path.join(s.r.dir, 'pkg/a.go'));
  vscode.window.activeTextEditor = {
    document: { uri: file, lineAt: (l) => ({ text: ['package pkg', '', 'const A = 1'][l] }) },
    selection: new vscode.Selection(new vscode.Position(2, 0), new vscode.Position(2, 11)),
  };
  t.after(() => { vscode.window.activeTextEditor = undefined; });
  vscode.answers.input.push('Make A configurable');
  await vscode.commands.executeCommand('bcode.createTask');
  const create = s.server.sent.find((x) => x.params && x.params.command === 'bcode.task.create');
  assert.deepEqual(create.params.arguments[0], { goal: 'Make A configurable', uri: file.toString(), range: { start: { line: 2, character: 0 }, end: { line: 2, character: 11 } }, run: true });
  assert.match(vscode.calls.find((c) => c.kind === 'showInputBox').args[0].value, /lines 3-3: const A = 1$/);

  // The server did not show the pack itself: the extension opens its URI.
  vscode.workspace.registerTextDocumentContentProvider('bcode-pack', { provideTextDocumentContent: async () => '# pack' });
  await vscode.commands.executeCommand('bcode.previewPack');
  const opened = vscode.calls.filter((c) => c.kind === 'openTextDocument').pop();
  assert.equal(opened.args[0].toString(), 'bcode-pack:/1/a.go-L1-L3.md');

  await vscode.commands.executeCommand('bcode.runEvidence');
  assert.ok(s.server.sent.some((x) => x.params && x.params.command === 'bcode.evidence.run'));
  assert.deepEqual(s.server.sent.filter((x) => x.method === 'bcode/evidence').pop().params, { wait: true });
  assert.equal(s.status.item.text, '$(bug) 1 mutant survives');
  assert.equal(s.status.item.command, 'bcode.runEvidence');
});

test('a missing server makes every command say how to fix it', async (t) => {
  vscode.reset();
  const tree = new TasksTree(undefined);
  tree.setApi(undefined, 'bcode-ls ("bcode-ls") is not on PATH');
  const ds = registerCommands({ api: () => undefined, tree, status: new EvidenceStatus(), problem: () => 'bcode-ls is not on PATH. Install it with go install' });
  t.after(() => ds.forEach((d) => d.dispose()));
  const roots = await tree.getChildren();
  assert.equal(tree.getTreeItem(roots[0]).label, 'bcode-ls ("bcode-ls") is not on PATH');
  await vscode.commands.executeCommand('bcode.runEvidence');
  assert.match(vscode.calls.find((c) => c.kind === 'showErrorMessage').args[0], /^bcode: bcode-ls is not on PATH\. Install it with go install/);
});
