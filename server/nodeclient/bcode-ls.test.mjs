// A real-client test: vscode-languageserver-protocol (the stack VS Code's
// language client is built on) spawns `bcode-ls --stdio`, initializes,
// opens and saves a file of a repository with a surviving mutant, receives
// the evidence diagnostics, lists the code actions on one, and calls
// bcode/tasks. The Go test TestNodeClient builds bcode-ls and the
// repository and runs this file with BCODE_LS and BCODE_REPO set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
  InitializeRequest,
  InitializedNotification,
  DidOpenTextDocumentNotification,
  DidSaveTextDocumentNotification,
  PublishDiagnosticsNotification,
  CodeActionRequest,
  ShutdownRequest,
  ExitNotification,
  WorkDoneProgressCreateRequest,
  DiagnosticSeverity,
} from 'vscode-languageserver-protocol/node';

const ls = process.env.BCODE_LS;
const repo = process.env.BCODE_REPO;

test('bcode-ls over stdio with the VS Code protocol stack', { skip: !ls || !repo ? 'set BCODE_LS and BCODE_REPO (the Go test TestNodeClient does)' : false, timeout: 240_000 }, async () => {
  const child = spawn(ls, ['--stdio', '--no-watch', '--debounce', '50ms'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const conn = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));

  const file = path.join(repo, 'price', 'price.go');
  const uri = pathToFileURL(file).href;
  const progress = [];
  let resolveDiags;
  const diagnostics = new Promise((resolve) => { resolveDiags = resolve; });
  conn.onRequest(WorkDoneProgressCreateRequest.type, () => null);
  conn.onNotification('$/progress', (p) => progress.push(p.value.kind));
  conn.onNotification(PublishDiagnosticsNotification.type, (p) => {
    if (p.uri === uri && p.diagnostics.some((d) => d.severity === DiagnosticSeverity.Warning)) resolveDiags(p.diagnostics);
  });
  conn.listen();

  try {
    const init = await conn.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(repo).href,
      capabilities: { window: { workDoneProgress: true }, textDocument: { codeAction: { dataSupport: true } } },
      clientInfo: { name: 'node vscode-languageserver-protocol' },
    });
    assert.equal(init.serverInfo.name, 'bcode-ls');
    assert.ok(init.capabilities.executeCommandProvider.commands.includes('bcode.evidence.run'));
    await conn.sendNotification(InitializedNotification.type, {});

    const text = readFileSync(file, 'utf8');
    await conn.sendNotification(DidOpenTextDocumentNotification.type, { textDocument: { uri, languageId: 'go', version: 1, text } });
    await conn.sendNotification(DidSaveTextDocumentNotification.type, { textDocument: { uri } });

    const diags = await diagnostics;
    const survivor = diags.find((d) => d.severity === DiagnosticSeverity.Warning && d.code === 'conditional_boundary');
    assert.ok(survivor, `no conditional_boundary warning in ${JSON.stringify(diags)}`);
    assert.equal(survivor.source, 'bcode');
    assert.equal(survivor.range.start.line, 4);
    const line = text.split('\n')[4];
    assert.equal(line.slice(survivor.range.start.character, survivor.range.end.character), 'n > 10');
    // The diagnostic carries the mutant as data (server.MutantData), sent back as received.
    assert.equal(typeof survivor.data, 'object');
    assert.match(survivor.data.id, /^[0-9a-f]+$/);
    assert.equal(survivor.data.verdict, 'survived');
    assert.ok(survivor.relatedInformation.length > 0);

    const actions = await conn.sendRequest(CodeActionRequest.type, {
      textDocument: { uri },
      range: { start: survivor.range.start, end: survivor.range.start },
      context: { diagnostics: [survivor] },
    });
    const titles = actions.map((a) => a.title);
    for (const want of ['bcode: Show mutant diff', 'bcode: Add a test for this boundary', 'bcode: Preview context pack', 'bcode: Run evidence now']) {
      assert.ok(titles.some((t) => t === want || t.startsWith(`${want}: `)), `no "${want}" in ${JSON.stringify(titles)}`);
    }
    const add = actions.find((a) => a.title.startsWith('bcode: Add a test for this boundary'));
    assert.equal(add.command.command, 'bcode.task.create');
    assert.equal(add.command.arguments[0].mutantId, survivor.data.id);

    const tasks = await conn.sendRequest('bcode/tasks', {});
    assert.ok(Array.isArray(tasks.tasks));

    const evidence = await conn.sendRequest('bcode/evidence', { wait: true });
    assert.equal(evidence.state, 'done');
    assert.ok(progress.includes('begin') && progress.includes('end'), `progress ${progress}`);

    await assert.rejects(conn.sendRequest('bcode/task', { id: 'no-such-task' }), (err) => err.code === -32602 && /not found/.test(err.message));

    await conn.sendRequest(ShutdownRequest.type);
    await conn.sendNotification(ExitNotification.type);
    const code = await new Promise((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, stderr);
  } catch (err) {
    child.kill();
    err.message += `\nbcode-ls stderr:\n${stderr}`;
    throw err;
  } finally {
    conn.dispose();
  }
});

const pyRepo = process.env.BCODE_PY_REPO;

test('bcode-ls shows a surviving Python mutant', { skip: !ls || !pyRepo ? 'set BCODE_LS and BCODE_PY_REPO (the Go test TestNodeClient does when pytest is installed)' : false, timeout: 240_000 }, async () => {
  const child = spawn(ls, ['--stdio', '--no-watch', '--debounce', '50ms'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const conn = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const file = path.join(pyRepo, 'shop', 'price.py');
  const uri = pathToFileURL(file).href;
  let resolveDiags;
  const diagnostics = new Promise((resolve) => { resolveDiags = resolve; });
  conn.onRequest(WorkDoneProgressCreateRequest.type, () => null);
  conn.onNotification(PublishDiagnosticsNotification.type, (p) => {
    if (p.uri === uri && p.diagnostics.some((d) => d.severity === DiagnosticSeverity.Warning)) resolveDiags(p.diagnostics);
  });
  conn.listen();
  try {
    await conn.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(pyRepo).href,
      capabilities: { window: { workDoneProgress: true }, textDocument: { codeAction: { dataSupport: true } } },
      clientInfo: { name: 'node vscode-languageserver-protocol' },
    });
    await conn.sendNotification(InitializedNotification.type, {});
    const text = readFileSync(file, 'utf8');
    await conn.sendNotification(DidOpenTextDocumentNotification.type, { textDocument: { uri, languageId: 'python', version: 1, text } });
    await conn.sendNotification(DidSaveTextDocumentNotification.type, { textDocument: { uri } });
    const diags = await diagnostics;
    const survivor = diags.find((d) => d.severity === DiagnosticSeverity.Warning && d.code === 'conditional_boundary');
    assert.ok(survivor, `no conditional_boundary warning in ${JSON.stringify(diags)}`);
    assert.equal(survivor.source, 'bcode');
    assert.equal(survivor.range.start.line, 2);
    const line = text.split('\n')[2];
    assert.equal(line.slice(survivor.range.start.character, survivor.range.end.character), 'n > 10');
    assert.match(survivor.message, /n >= 10/);
    await conn.sendRequest(ShutdownRequest.type);
    await conn.sendNotification(ExitNotification.type);
    const code = await new Promise((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, stderr);
  } catch (err) {
    child.kill();
    err.message += `\nbcode-ls stderr:\n${stderr}`;
    throw err;
  } finally {
    conn.dispose();
  }
});
