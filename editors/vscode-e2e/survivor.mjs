// A surviving mutant in a real VS Code, in any language bcode-ls serves:
// code-server with the packaged .vsix, driven through chromium by
// playwright-core, on a checkout whose tests never try a discount's
// boundary. As a user would: open the file → Ctrl+G to the boundary's
// `>=`, type `>` over it → Ctrl+S → bcode's squiggle → the Problems view
// says bcode, the mutant and its line and column → Ctrl+. on it offers
// bcode's quick fixes → "Show mutant diff" shows the mutated line → "Show
// all surviving mutants on this line" → "Go to covering test" opens the
// test file at the test.
//
// Run by editors/editorstest (TestVSCodeTypeScriptSurvivor,
// TestVSCodeRustSurvivor), which passes:
//   BCODE_LS, BCODE_STATE, BCODE_VSIX, BCODE_E2E_CHROMIUM,
//   BCODE_SV_REPO, BCODE_SV_FILE (relative to the repo), BCODE_SV_LINE and
//   BCODE_SV_COL (1-based, where `>=` starts), BCODE_SV_TEXT (the changed
//   line's text), BCODE_SV_MESSAGE (what the diagnostic must say),
//   BCODE_SV_MUTATED (the mutated line's text in the mutant's diff),
//   BCODE_SV_COVERING, BCODE_SV_TEST_FILE and BCODE_SV_TEST_LINE (the
//   test that ran against it, its file and its line, 1-based).
// Each step prints `step <ms> <name>`; a failure prints `fail <step>: <why>`.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through go test ./editors/editorstest -run VSCode`);
  return v;
};
const ls = env('BCODE_LS');
const vsix = env('BCODE_VSIX');
const repo = env('BCODE_SV_REPO');
const file = env('BCODE_SV_FILE');
const line = Number(env('BCODE_SV_LINE'));
const col = Number(env('BCODE_SV_COL'));
const changed = env('BCODE_SV_TEXT');
const message = env('BCODE_SV_MESSAGE');
const mutated = env('BCODE_SV_MUTATED');
const browserPath = env('BCODE_E2E_CHROMIUM');
const coveringTest = env('BCODE_SV_COVERING'); // the covering test's name
const testFile = env('BCODE_SV_TEST_FILE');
const testLine = Number(env('BCODE_SV_TEST_LINE')); // 1-based

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bcode-vscode-survivor-'));
const home = path.join(tmp, 'home');
const userData = path.join(tmp, 'user-data');
const extensions = path.join(tmp, 'extensions');
for (const d of [home, userData, extensions]) fs.mkdirSync(d, { recursive: true });
const codeServer = path.join(here, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const childEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), XDG_DATA_HOME: path.join(home, '.local', 'share') };
// The extension host takes its environment from a login shell of this
// HOME: the PATH and the toolchain homes a user's profile would give
// (cargo's rustup proxies need RUSTUP_HOME once HOME is not the user's).
const keep = ['PATH', 'RUSTUP_HOME', 'CARGO_HOME', 'GOPATH', 'GOCACHE', 'GOMODCACHE', 'BCODE_STATE'];
const profile = keep.filter((k) => process.env[k]).map((k) => `export ${k}='${process.env[k].replace(/'/g, "'\\''")}'\n`).join('');
for (const f of ['.profile', '.bashrc']) fs.writeFileSync(path.join(home, f), profile);
fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
  'files.autoSave': 'off',
  'bcode.serverPath': ls,
}, null, 2));

const started = Date.now();
let current = 'setup';
async function step(name, f) {
  current = name;
  const t0 = Date.now();
  await f();
  console.log(`step ${Date.now() - t0} ${name}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function waitHTTP(url, ms) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch { /* not up yet */ }
    if (Date.now() > end) throw new Error(`${url} did not answer in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let server;
let browser;
let page;
let serverLog = '';

// startServer starts code-server on port; its parent gives up when its
// child's handshake takes 10 s on a busy machine: start again then.
async function startServer(port) {
  for (let attempt = 1; ; attempt++) {
    server = spawn(process.execPath, [codeServer,
      '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
      '--user-data-dir', userData, '--extensions-dir', extensions, '--config', path.join(tmp, 'config.yaml'),
      '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override',
      '--ignore-last-opened', repo], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout.on('data', (b) => { serverLog += b; });
    server.stderr.on('data', (b) => { serverLog += b; });
    const exited = new Promise((resolve) => server.once('exit', (code) => resolve(`code-server exited with ${code}`)));
    const up = await Promise.race([waitHTTP(`http://127.0.0.1:${port}/healthz`, 90_000).then(() => ''), exited]);
    if (up === '') return;
    if (attempt === 3) throw new Error(up);
    console.log(`retry: ${up}`);
  }
}

// goTo puts the cursor at line:column with Ctrl+G.
async function goTo(l, c) {
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`:${l}:${c}`);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

// actionLabels opens Ctrl+.'s menu at the cursor until a row matching re
// shows (the actions may be late on a busy machine) and returns every
// row's label.
async function actionLabels(re) {
  const item = page.locator('.action-widget .monaco-list-row', { hasText: re }).first();
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('Control+.');
    try {
      await item.waitFor({ state: 'visible', timeout: 10_000 });
      break;
    } catch (e) {
      if (attempt === 3) throw e;
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1000);
    }
  }
  return page.locator('.action-widget .monaco-list-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') || r.innerText));
}

// pickAction moves the menu's focus to the row matching re with the
// keyboard (the menu's pointer guard swallows synthetic clicks) and runs it.
async function pickAction(re) {
  for (let i = 0; ; i++) {
    const focused = (await page.locator('.action-widget .monaco-list-row.focused').first().getAttribute('aria-label')) || '';
    if (re.test(focused)) break;
    if (i > 12) throw new Error(`no ${re} among the code actions (focus on "${focused}")`);
    await page.keyboard.press('ArrowDown');
  }
  await page.keyboard.press('Enter');
}

async function main() {
  const port = await freePort();
  await step('install the .vsix', async () => {
    const out = execFileSync(process.execPath, [codeServer, '--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', vsix],
      { env: childEnv, encoding: 'utf8', timeout: 60_000 });
    if (!/was successfully installed/.test(out)) throw new Error(`code-server --install-extension: ${out}`);
  });
  await step('start code-server', () => startServer(port));
  await step('open the workspace in chromium', async () => {
    browser = await chromium.launch({ executablePath: browserPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    page = await (await browser.newContext({ viewport: { width: 1440, height: 860 } })).newPage();
    page.setDefaultTimeout(90_000);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(repo)}`, { waitUntil: 'domcontentloaded', timeout: 120_000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  });
  await step(`open ${file}`, async () => {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(file);
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: path.basename(file) }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.tab.active', { hasText: path.basename(file) }).waitFor();
    await page.locator('.monaco-editor .view-line', { hasText: changed.replace('>', '>=') }).first().waitFor();
    // bcode-ls answers: the status-bar item leaves "starting".
    await page.locator('[id="bcode-dev.bcode.bcode.evidence"]', { hasText: /evidence|mutant/ }).first().waitFor({ timeout: 60_000 });
  });
  await step('move the boundary (`>=` → `>`) and save', async () => {
    await goTo(line, col);
    await page.keyboard.press('Shift+ArrowRight');
    await page.keyboard.press('Shift+ArrowRight');
    await page.keyboard.type('>');
    await page.locator('.monaco-editor .view-line', { hasText: changed }).first().waitFor();
    await page.keyboard.press('Control+S');
    await page.locator('.tab.active.dirty').waitFor({ state: 'detached', timeout: 15_000 });
  });
  await step("bcode's squiggle after the save", async () => {
    await page.locator('.monaco-editor .squiggly-warning').first().waitFor({ timeout: 180_000 });
  });
  await step('the Problems view: bcode, the mutant, its line and column', async () => {
    await page.keyboard.press('Control+Shift+M');
    const want = `Ln ${line}, Col ${col}`;
    const row = page.locator('.markers-panel .monaco-list-row', { hasText: message }).filter({ hasText: want }).first();
    await row.waitFor({ timeout: 30_000 }).catch(async () => {
      const rows = await page.locator('.markers-panel .monaco-list-row').allInnerTexts();
      throw new Error(`no problem says ${message} at ${want}: ${JSON.stringify(rows)}`);
    });
    const text = (await row.innerText()).replace(/\s+/g, ' ');
    console.log(`note problem: ${text}`);
    if (!/\bbcode\b/.test(text)) throw new Error(`the problem's source is not bcode: ${text}`);
  });
  await step("Ctrl+. on the survivor: bcode's quick fixes; Show mutant diff", async () => {
    await page.locator('.monaco-editor .view-line', { hasText: changed }).first().click();
    await goTo(line, col);
    const labels = await actionLabels(/Show mutant diff/);
    console.log(`note quick fixes: ${JSON.stringify(labels)}`);
    for (const want of [`Show mutant diff: ${message}`, `Add a test for this boundary: ${message}`]) {
      if (!labels.some((l) => l.includes(want))) throw new Error(`no "${want}" among ${JSON.stringify(labels)}`);
    }
    await pickAction(/Show mutant diff/);
    await page.locator('.editor-group-container .monaco-editor', { hasText: mutated }).first().waitFor({ timeout: 15_000 });
  });
  await step('"Show all surviving mutants on this line" → Go to covering test: the test file opens at the test', async () => {
    await page.keyboard.press('Control+P');
    const open = page.locator('.quick-input-widget input');
    await open.waitFor({ state: 'visible' });
    await open.fill(file);
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: path.basename(file) }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.monaco-editor .view-line', { hasText: changed }).first().click();
    await goTo(line, col);
    await actionLabels(/Show all surviving mutants on this line/);
    await pickAction(/Show all surviving mutants on this line/);
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 20_000 });
    await input.fill('Go to covering test');
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: `Go to covering test ${coveringTest}` }).first();
    await row.waitFor({ timeout: 10_000 });
    await page.keyboard.press('Enter');
    await page.locator('.tab.active', { hasText: path.basename(testFile) }).waitFor({ timeout: 15_000 });
    // The cursor is on the test's name: the status bar says where.
    const where = page.locator('.statusbar-item', { hasText: new RegExp(`Ln ${testLine}, Col`) }).first();
    await where.waitFor({ timeout: 10_000 }).catch(async () => {
      throw new Error(`the cursor is not on line ${testLine} of ${testFile}: ${await page.locator('.statusbar').innerText()}`);
    });
  });
}

let failed = false;
try {
  await main();
  console.log(`ok ${Date.now() - started} ms`);
} catch (e) {
  failed = true;
  console.log(`fail ${current}: ${e.stack || e}`);
  if (process.env.BCODE_E2E_SCREENSHOTS && page) {
    await page.screenshot({ path: path.join(process.env.BCODE_E2E_SCREENSHOTS, 'survivor-fail.png') }).catch(() => {});
  }
  for (const f of fs.readdirSync(path.join(userData, 'logs'), { recursive: true }).filter((f) => /bcode\.log$/.test(f))) {
    console.log(`--- ${f} (tail)`);
    console.log(fs.readFileSync(path.join(userData, 'logs', f), 'utf8').split('\n').slice(-30).join('\n'));
  }
  console.log('--- code-server log (tail)');
  console.log(serverLog.split('\n').slice(-40).join('\n'));
} finally {
  await browser?.close().catch(() => {});
  server?.kill('SIGTERM');
  fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
}
process.exit(failed ? 1 : 0);
