// The extension's own logic, with no editor and no server: what a task row
// says and offers, which inline actions package.json shows for it, the
// Accept confirmation, the status-bar text, finding bcode-ls, and the
// virtual-document fallback.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { actionsFor, contextValue, describe, applyChanged, acceptPlan, ago } = require('../out/src/tasksModel');
const { summarize } = require('../out/src/evidenceStatus');
const { resolveServer, goBinDirs, installCommand, installHint } = require('../out/src/serverPath');
const { levelOf } = require('../out/src/serverLog');
const { contentWithFallback } = require('../out/src/content');

const manifest = require('../package.json');
const statuses = ['queued', 'running', 'verified', 'blocked', 'cancelled', 'accepted', 'rejected', 'failed'];

// shownInline evaluates the `when` clause of the command's inline menu entry
// the way VS Code does for the forms the manifest uses.
function shownInline(command, viewItem) {
  const entry = manifest.contributes.menus['view/item/context'].find((m) => m.command === command && m.group.startsWith('inline'));
  assert.ok(entry, `no inline menu entry for ${command}`);
  const m = /^view == bcode\.tasks && viewItem =~ \/(.*)\/$/.exec(entry.when);
  assert.ok(m, `unexpected when clause ${entry.when}`);
  return new RegExp(m[1]).test(viewItem);
}

test('inline Accept is shown only for verified tasks; the others follow the engine rules', () => {
  for (const s of statuses) {
    const cv = contextValue(s);
    const a = actionsFor(s);
    assert.equal(shownInline('bcode.tasks.accept', cv), s === 'verified', `accept for ${s} (${cv})`);
    assert.equal(shownInline('bcode.tasks.reject', cv), a.reject, `reject for ${s}`);
    assert.equal(shownInline('bcode.tasks.resume', cv), a.resume, `resume for ${s}`);
    assert.equal(shownInline('bcode.tasks.cancel', cv), a.cancel, `cancel for ${s}`);
  }
  assert.deepEqual(actionsFor('failed'), { accept: false, reject: true, resume: true, cancel: false });
  assert.deepEqual(actionsFor('running'), { accept: false, reject: true, resume: false, cancel: true });
  assert.deepEqual(actionsFor('accepted'), { accept: false, reject: false, resume: false, cancel: false });
});

test('every contributed command has a title, and tree-only commands stay out of the palette', () => {
  const ids = new Set(manifest.contributes.commands.map((c) => c.command));
  for (const menu of Object.values(manifest.contributes.menus)) {
    for (const m of menu) assert.ok(ids.has(m.command), `menu names unknown command ${m.command}`);
  }
  const palette = new Map(manifest.contributes.menus.commandPalette.map((m) => [m.command, m.when]));
  assert.equal(palette.get('bcode.tasks.accept'), 'false');
  // In the palette only while the server runs, Create Task only with a selection.
  assert.equal(palette.get('bcode.createTask'), 'bcode.active && editorHasSelection');
  for (const c of ['bcode.previewPack', 'bcode.runEvidence', 'bcode.tasks.refresh']) assert.match(palette.get(c), /^bcode\.active\b/, c);
  assert.equal(palette.has('bcode.restartServer'), false, 'Restart stays available while the server is off');
  for (const c of manifest.contributes.commands) {
    assert.equal(c.category, 'bcode', c.command);
    assert.match(c.title, /^[A-Z][a-z]*( ([A-Z][a-z]*|from|a|the|of))*$/, `Title Case, short: ${c.title}`);
    assert.ok(c.title.length <= 28, c.title);
  }
  assert.deepEqual(manifest.categories, ['Testing', 'Linters', 'Other']);
  assert.equal(manifest.icon, 'media/icon.png');
  const png = fs.readFileSync(path.join(__dirname, '..', manifest.icon));
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
  assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [128, 128], 'the icon is 128x128');
  assert.equal(manifest.capabilities.untrustedWorkspaces.supported, false, 'it runs tests: trusted workspaces only');
  assert.match(manifest.capabilities.untrustedWorkspaces.description, /runs its tests/);
  // Activation: projects bcode applies to, not every git repository.
  assert.ok(!manifest.activationEvents.includes('workspaceContains:.git'));
  assert.ok(!manifest.activationEvents.includes('*'));
  assert.deepEqual(manifest.activationEvents.filter((e) => e.startsWith('onLanguage:')), ['onLanguage:go', 'onLanguage:python', 'onLanguage:javascript', 'onLanguage:javascriptreact', 'onLanguage:typescript', 'onLanguage:typescriptreact', 'onLanguage:rust']);
  assert.ok(manifest.activationEvents.includes('workspaceContains:**/package.json'));
  assert.ok(manifest.activationEvents.includes('workspaceContains:**/Cargo.toml'));
  assert.ok(manifest.activationEvents.includes('workspaceContains:**/go.mod'));
  assert.ok(manifest.activationEvents.includes('workspaceContains:**/pyproject.toml'));
  assert.equal(manifest.contributes.views.bcode[0].id, 'bcode.tasks');
  assert.equal(manifest.contributes.viewsContainers.activitybar[0].id, 'bcode');
});

test('a task row shows status, verdict and last event', () => {
  const now = new Date('2025-01-02T10:10:00Z');
  const row = describe({ id: 'abc', goal: 'Pin the boundary', status: 'failed', verdict: 'unverified', reason: 'passes on base', branch: 'bcode/abc', updatedAt: '', lastEvent: { seq: 7, kind: 'check.finished', at: '2025-01-02T10:07:00Z' } }, now);
  assert.equal(row.label, 'Pin the boundary');
  assert.equal(row.description, 'failed · unverified · passes on base · check.finished 3m ago', 'why it failed is on the row');
  assert.match(row.tooltip, /reason: passes on base/);
  assert.equal(row.contextValue, 'bcodeTask status=failed +reject +resume');
  assert.equal(row.icon.id, 'error');
  const v = describe({ id: 'v', goal: 'x'.repeat(100), status: 'verified', verdict: 'verified', branch: 'bcode/v', updatedAt: '' }, now);
  assert.equal(v.description, 'verified', 'a verdict equal to the status is not repeated');
  assert.equal(v.label.length, 80);
  assert.equal(ago('2025-01-01T10:10:00Z', now), '1d ago');
  assert.equal(ago('garbage', now), '');
});

test('a task tooltip shows the agent\'s and model\'s words literally: no link, image, command or emphasis', () => {
  const hostile = 'see [docs](command:workbench.action.terminal.new) ![x](https://evil.example/t.png) <https://evil.example> https://evil.example **bold** `code` # head';
  const row = describe({ id: 'a`b', goal: hostile, status: 'failed', verdict: 'unverified', reason: hostile, branch: 'bcode/a](x)', updatedAt: '',
    lastEvent: { seq: 1, kind: '[k](command:x)', at: 'now' } });
  // Every ASCII punctuation character of the hostile text is escaped: a
  // CommonMark renderer shows each one as itself.
  for (const line of row.tooltip.split('\n')) {
    const bare = line.replace(/\\[!-/:-@[-`{-~]/g, '');
    // What is left once bcode's own words are taken out is the hostile text.
    let structural = line.startsWith('**') ? bare.slice(2, -2) : bare;
    structural = structural.replace(/^(status|reason|last event): /, '').replace(/ \(#\d+\) at /, ' ').replace(/, verdict: /, ' ');
    assert.doesNotMatch(structural, /[[\]()<>`*!#:]/, `unescaped Markdown in ${JSON.stringify(line)}`);
  }
  assert.match(row.tooltip, /see \\\[docs\\\]\\\(command\\:workbench/);
});

test('bcode/taskChanged updates a known task and reports an unknown one', () => {
  const tasks = [{ id: 'a', goal: 'g', status: 'running', branch: 'bcode/a', updatedAt: '' }];
  const now = new Date('2025-01-02T10:00:00Z');
  assert.equal(applyChanged(tasks, { id: 'a', status: 'verified', verdict: 'verified', event: 'task.stopped', seq: 12 }, now), true);
  assert.equal(tasks[0].status, 'verified');
  assert.deepEqual(tasks[0].lastEvent, { seq: 12, kind: 'task.stopped', at: now.toISOString() });
  assert.equal(applyChanged(tasks, { id: 'zzz', status: 'queued', event: 'task.created' }, now), false);
  // A server that sends the event's kind and time: the row shows when the
  // event happened, not when the notification arrived.
  assert.equal(applyChanged(tasks, { id: 'a', status: 'accepted', kind: 'task.accepted', event: 'task.accepted', at: '2025-01-02T09:52:30Z', seq: 14 }, now), true);
  assert.deepEqual(tasks[0].lastEvent, { seq: 14, kind: 'task.accepted', at: '2025-01-02T09:52:30Z' });
  assert.equal(tasks[0].updatedAt, '2025-01-02T09:52:30Z');
  assert.equal(describe(tasks[0], now).description, 'accepted · task.accepted 7m ago');
  // A malformed time falls back to the arrival time.
  applyChanged(tasks, { id: 'a', status: 'accepted', kind: 'task.accepted', event: 'task.accepted', at: 'yesterday', seq: 15 }, now);
  assert.equal(tasks[0].lastEvent.at, now.toISOString());
});

test('the Accept confirmation says what happens to the current branch', () => {
  const t = { id: 'abc', branch: 'bcode/abc', base: '1111111aaaa' };
  const ff = acceptPlan(t, { branch: 'main', head: '1111111aaaa', dirty: false, commits: 1 });
  assert.equal(ff.message, 'Accept task abc?');
  assert.match(ff.detail, /your current branch main will be fast-forwarded to bcode\/abc \(1 commit\)/);
  assert.match(ff.detail, /Nothing is pushed/);
  assert.equal(ff.blocked, false);
  const cp = acceptPlan(t, { branch: 'feature', head: '2222222', dirty: false, commits: 3 });
  assert.match(cp.detail, /the 3 commits of bcode\/abc will be cherry-picked onto your current branch feature, which has moved since the task's base 1111111/);
  const dirty = acceptPlan(t, { branch: undefined, head: '2222222bbbb', dirty: true, commits: 2 });
  assert.equal(dirty.blocked, true);
  assert.match(dirty.detail, /uncommitted changes/);
  assert.match(dirty.detail, /detached HEAD \(2222222\)/);
});

test('the status bar counts surviving mutants', () => {
  const m = (verdict) => ({ id: verdict, file: 'a.go', line: 1, operator: 'boundary', original: '<=', mutated: '<', verdict });
  assert.equal(summarize({ run: 1, state: 'done', mutants: [m('survived'), m('killed'), m('survived')] }).text, '$(bug) 2 mutants survive');
  assert.equal(summarize({ run: 1, state: 'done', mutants: [m('survived')] }).text, '$(bug) 1 mutant survives');
  assert.equal(summarize({ run: 1, state: 'done', mutants: [m('survived')] }).warning, true);
  assert.equal(summarize({ run: 1, state: 'done', mutants: [m('killed'), m('killed')] }).text, '$(pass) all 2 mutants killed');
  // Nothing to judge is said as such, with the server's reason, never "0 of 0".
  const none = summarize({ run: 1, state: 'done', mutants: [], notes: ['no change: the working tree is the base abc123, so there is nothing to judge'] });
  assert.equal(none.text, '$(circle-slash) bcode: no change');
  assert.match(none.tooltip, /nothing to judge/);
  assert.match(summarize({ run: 1, state: 'done', mutants: [], notes: ['the change has no Go files, so there is nothing to mutate'] }).tooltip, /no Go files/);
  assert.equal(summarize({ run: 1, state: 'done', mutants: [m('killed'), m('not_covered')] }).text, '$(info) 1 mutant not covered');
  // A mutant the run stopped before is shown, never counted as killed.
  assert.equal(summarize({ run: 1, state: 'done', mutants: [m('killed'), m('no_verdict')] }).text, '$(info) 1 mutant without a verdict');
  assert.equal(summarize({ run: 1, state: 'done', mutants: [] }).text, '$(pass) bcode: no mutants');
  assert.match(summarize({ run: 2, state: 'failed', error: 'baseline failed', mutants: [] }).tooltip, /baseline failed/);
  assert.match(summarize(undefined).tooltip, /Click to run evidence/);
  assert.match(summarize({ run: 3, state: 'running', mutants: [] }).text, /running/);
});

test('bcode-ls is found on PATH or through the setting, and a miss says how to fix it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bcode-path-'));
  const exe = path.join(dir, 'bcode-ls');
  fs.writeFileSync(exe, '#!/bin/sh\n', { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'not-exec'), '', { mode: 0o644 });
  assert.deepEqual(resolveServer(undefined, `/nonexistent${path.delimiter}${dir}`), { ok: true, path: exe });
  assert.deepEqual(resolveServer(exe, ''), { ok: true, path: exe });
  assert.deepEqual(resolveServer('./bcode-ls', '', dir), { ok: true, path: exe });
  const miss = resolveServer(undefined, '/nonexistent');
  assert.equal(miss.ok, false);
  assert.match(miss.message, /not on PATH/);
  assert.match(miss.fix, /in bcode's checkout: editors\/install\.sh vscode \(or go install \.\/cmd\/\.\.\.\)/);
  assert.match(miss.fix, /bcode\.serverPath/);
  assert.equal(installCommand, 'editors/install.sh vscode');
  assert.ok(installHint.includes(installCommand), installHint);
  // The command it names is there, from the checkout's root.
  assert.ok(fs.statSync(path.join(__dirname, '..', '..', installCommand.split(' ')[0])).mode & 0o111, 'editors/install.sh is executable');
  // Where `go install` puts it counts even when PATH lacks it.
  assert.deepEqual(resolveServer(undefined, '/nonexistent', undefined, ['/also-nonexistent', dir]), { ok: true, path: exe });
  assert.match(resolveServer(undefined, '/nonexistent', undefined, ['/gopath/bin']).message, /nor in \/gopath\/bin/);
  const notExec = resolveServer(path.join(dir, 'not-exec'), '');
  assert.equal(notExec.ok, false);
  assert.match(notExec.message, /not executable/);
});

test('virtual documents fall back to bcode/documentContent', async () => {
  assert.equal(await contentWithFallback('bcode-pack:/1/x.md', async () => 'via lsp', async () => 'via request'), 'via lsp');
  assert.equal(await contentWithFallback('bcode-pack:/1/x.md', async () => { throw new Error('unsupported'); }, async (u) => 'via request ' + u), 'via request bcode-pack:/1/x.md');
  assert.equal(await contentWithFallback('bcode-pack:/1/x.md', async () => null, async () => 'via request'), 'via request');
  await assert.rejects(contentWithFallback('bcode-pack:/9/x.md', async () => { throw new Error('no such'); }, async () => { throw new Error('too old'); }),
    /bcode-ls has no document bcode-pack:\/9\/x\.md: too old \(workspace\/textDocumentContent: no such\)/);
});

test('the Go bin directories: GOBIN, each GOPATH/bin, ~/go/bin, with go env run outside the workspace', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bcode-home-'));
  // A fake go on PATH that records where it ran and with which GOTOOLCHAIN.
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'bcode-gobin-'));
  const log = path.join(bin, 'log');
  fs.writeFileSync(path.join(bin, 'go'), `#!/bin/sh\necho "$PWD $GOTOOLCHAIN $*" > ${log}\necho\necho /gp1:/gp2\n`, { mode: 0o755 });
  const dirs = await goBinDirs({ PATH: `${bin}${path.delimiter}/usr/bin:/bin`, GOBIN: '/explicit/bin' }, home);
  assert.deepEqual(dirs, ['/explicit/bin', '/gp1/bin', '/gp2/bin', path.join(home, 'go', 'bin')]);
  assert.equal(fs.readFileSync(log, 'utf8').trim(), `${fs.realpathSync(home)} local env GOBIN GOPATH`);
  // No go at all: $GOPATH and the default.
  assert.deepEqual(await goBinDirs({ PATH: '/nonexistent', GOPATH: '/gp' }, home), ['/gp/bin', path.join(home, 'go', 'bin')]);
});

test("bcode-ls's stderr is logged at its own level", () => {
  assert.equal(levelOf('time=2025-01-02T10:00:00Z level=INFO msg="evidence run" files=2'), 'info');
  assert.equal(levelOf('time=2025-01-02T10:00:00Z level=DEBUG msg=x'), 'debug');
  assert.equal(levelOf('time=2025-01-02T10:00:00Z level=WARN msg=x'), 'warn');
  assert.equal(levelOf('time=2025-01-02T10:00:00Z level=ERROR msg="connection ended" err=EOF'), 'error');
  assert.equal(levelOf('time=… level=INFO+2 msg=x'), 'info');
  assert.equal(levelOf('panic: runtime error: index out of range'), 'error');
  assert.equal(levelOf('bcode-ls: --workers must be positive, got 0'), 'error');
  assert.equal(levelOf('some other line'), 'info');
});

test('bcode-ls settings go to the server as it reads them', () => {
  const { serverSettings } = require('../out/src/settings');
  assert.deepEqual(serverSettings({ uri: { fsPath: '/w' } }), { bcode: { evidenceOnSave: true, evidenceOnOpen: true, notCovered: 'line' } });
  const pkg = require('../package.json');
  for (const k of ['evidenceOnSave', 'evidenceOnOpen', 'notCovered']) {
    assert.ok(pkg.contributes.configuration.properties[`bcode.${k}`], `bcode.${k} is contributed`);
  }
  assert.deepEqual(pkg.contributes.configuration.properties['bcode.notCovered'].enum, ['line', 'each', 'off']);
});

test('a running task shows its attempt, turn and what its last event was; a queued one can run again', () => {
  const { endNotice } = require('../out/src/tasksModel');
  const now = new Date('2025-01-02T10:10:00Z');
  const tasks = [{ id: 'r', goal: 'Pin the boundary', status: 'queued', branch: 'bcode/r', updatedAt: '' }];
  assert.equal(actionsFor('queued').resume, true, 'a queued task (its start failed) runs again from the row');
  applyChanged(tasks, { id: 'r', status: 'running', kind: 'attempt.started', event: 'attempt.started', at: '2025-01-02T10:09:00Z', seq: 3, attempt: 1, summary: 'attempt 1 started' }, now);
  applyChanged(tasks, { id: 'r', status: 'running', kind: 'turn.finished', event: 'turn.finished', at: '2025-01-02T10:09:30Z', seq: 4, attempt: 1, turn: 2, summary: 'turn 2 finished, files changed' }, now);
  assert.equal(describe(tasks[0], now).description, 'running · attempt 1 turn 2 · turn 2 finished, files changed 30s ago');
  assert.match(describe(tasks[0], now).tooltip, /attempt 1, turn 2/);
  applyChanged(tasks, { id: 'r', status: 'verified', verdict: 'verified', kind: 'task.verified', event: 'task.verified', at: '2025-01-02T10:10:00Z', seq: 9, attempt: 1, turn: 2, summary: 'task.verified', ended: true }, now);
  assert.equal(describe(tasks[0], now).description, 'verified · task.verified 0s ago', 'attempt and turn only while it runs');

  const v = endNotice({ id: 'r', status: 'verified', event: 'task.verified', ended: true }, 'Pin the boundary');
  assert.deepEqual(v.actions, ['Diff', 'Accept', 'Reject']);
  assert.match(v.message, /task r "Pin the boundary" is verified/);
  const b = endNotice({ id: 'r', status: 'blocked', reason: 'the attempt budget is spent', event: 'task.blocked', ended: true }, undefined);
  assert.deepEqual(b.actions, ['Diff', 'Resume', 'Reject'], 'no Accept for a task that is not verified');
  assert.ok(b.error && /blocked: the attempt budget is spent/.test(b.message));
});
