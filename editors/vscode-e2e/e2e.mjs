// The bcode extension in a real VS Code in a real browser: code-server
// (from npm) with the packaged .vsix installed, driven through Debian's
// chromium by playwright-core, on the fixture repository of
// editors/editorstest. It does what a user does, with the mouse and the
// keyboard, and checks what the screen shows:
//
//   the status bar says "starting" (never "server off") until bcode-ls
//   answers → open quota.go → run evidence → the squiggle on `n <= limit` →
//   its hover → at most three quick fixes on the line, "Show mutant diff"
//   → "Show all surviving mutants on this line": the quick pick of every
//   action → Preview Context Pack: its progress notification, cancelled →
//   an untitled buffer: one message saying it needs a file → the Tasks view
//   → the failed task's reason → the tampered task's check: what was
//   tampered with and the test table → "bcode: Restart Language Server" and the status bar back from
//   "server off" → bcode-ls missing: a toast with the install line → the
//   server installed where `go install` puts it → the toast's Restart works.
//   With BCODE_FLOW_REPO (a clean checkout naming the scripted model and the
//   sandbox image; BCODE_AGENT, BCODE_CLI, BCODE_SANDBOX_GOCACHE): select
//   func Discount → Ctrl+. "Create task from selection" → type the goal in
//   the input box → the Tasks view's row runs with its attempt → the
//   "is verified" notification's Accept → the dialog's Accept → main has it.
//
// Run by editors/editorstest/vscode_browser_test.go, which builds bcode-ls,
// the fixture and the .vsix and passes them in the environment:
//   BCODE_LS, BCODE_STATE, BCODE_FIXTURE_REPO, BCODE_FIXTURE_FAILED, BCODE_FIXTURE_TAMPERED,
//   BCODE_VSIX, BCODE_E2E_SCREENSHOTS (a directory, optional),
//   BCODE_E2E_CHROMIUM (default /usr/bin/chromium).
// Each step prints one line, `step <ms> <name>` (and what it saw on `note`
// lines); a failure prints
// `fail <step>: <why>` and leaves a screenshot named after the step.
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
  if (!v) throw new Error(`${name} is not set: run this through go test ./editors/editorstest -run VSCodeBrowser`);
  return v;
};
const ls = env('BCODE_LS');
const repo = env('BCODE_FIXTURE_REPO');
const failedTask = env('BCODE_FIXTURE_FAILED');
const tamperedTask = env('BCODE_FIXTURE_TAMPERED');
const vsix = env('BCODE_VSIX');
const shots = process.env.BCODE_E2E_SCREENSHOTS || '';
const browserPath = process.env.BCODE_E2E_CHROMIUM || '/usr/bin/chromium';
const installLine = "in bcode's checkout: editors/install.sh vscode (or go install ./cmd/...)";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bcode-vscode-e2e-'));
const dirs = {
  home: path.join(tmp, 'home'),
  userData: path.join(tmp, 'user-data'),
  extensions: path.join(tmp, 'extensions'),
  gopath: path.join(tmp, 'gopath'),
};
for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
const settingsFile = path.join(dirs.userData, 'User', 'settings.json');
const codeServer = path.join(here, 'node_modules', 'code-server', 'out', 'node', 'entry.js');

// PATH without any bcode-ls on it, so the "missing" step is real on a
// machine that has one installed.
const cleanPath = (process.env.PATH || '').split(path.delimiter)
  .filter((d) => d && !fs.existsSync(path.join(d, 'bcode-ls'))).join(path.delimiter);
const childEnv = {
  ...process.env,
  PATH: cleanPath,
  HOME: dirs.home,
  XDG_CONFIG_HOME: path.join(dirs.home, '.config'),
  XDG_DATA_HOME: path.join(dirs.home, '.local', 'share'),
  GOPATH: dirs.gopath,
  GOBIN: '',
  // The build and module caches stay the real ones: a cold cache would
  // make every evidence run compile the standard library.
  GOCACHE: process.env.GOCACHE || execFileSync('go', ['env', 'GOCACHE'], { encoding: 'utf8' }).trim(),
  GOMODCACHE: process.env.GOMODCACHE || execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim(),
};
delete childEnv.GOBIN;
// VS Code takes the extension host's environment from a login shell
// (`$SHELL -il`), which reads the profile of this HOME: give it the PATH
// with Go on it, as a user's profile would.
for (const f of ['.profile', '.bashrc']) {
  fs.writeFileSync(path.join(dirs.home, f), `export PATH='${cleanPath.replace(/'/g, "'\\''")}'\nexport GOPATH='${dirs.gopath}'\n`);
}

const started = Date.now();
let current = 'setup';
const timings = [];
async function step(name, f) {
  current = name;
  const t0 = Date.now();
  await f();
  const ms = Date.now() - t0;
  timings.push([name, ms]);
  console.log(`step ${ms} ${name}`);
}

function writeSettings(extra) {
  fs.mkdirSync(path.dirname(settingsFile), { recursive: true });
  fs.writeFileSync(settingsFile, JSON.stringify({
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.colorTheme': 'Default Dark Modern',
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.ignoreRecommendations': true,
    'update.mode': 'none',
    'editor.hover.delay': 300,
    'window.commandCenter': false,
    'chat.commandCenter.enabled': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    ...extra,
  }, null, 2));
}

const installed = path.join(dirs.gopath, 'bin', 'bcode-ls');
function installServer() {
  // Copy beside it, then rename into place (as go install does): the path
  // never names a file still open for writing, which a spawn at that
  // moment would meet as ETXTBSY.
  fs.mkdirSync(path.dirname(installed), { recursive: true });
  const tmp = `${installed}.tmp-${process.pid}`;
  fs.copyFileSync(ls, tmp);
  fs.chmodSync(tmp, 0o755);
  fs.renameSync(tmp, installed);
  // bcode beside it, as `go install ./cmd/...` puts it: bcode-ls serves
  // the sandbox's seed build cache through it (the task flow).
  if (process.env.BCODE_CLI) {
    const cli = path.join(path.dirname(installed), 'bcode');
    fs.copyFileSync(process.env.BCODE_CLI, `${cli}.tmp`);
    fs.chmodSync(`${cli}.tmp`, 0o755);
    fs.renameSync(`${cli}.tmp`, cli);
  }
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
      const r = await fetch(url);
      if (r.ok) return;
    } catch { /* not up yet */ }
    if (Date.now() > end) throw new Error(`${url} did not answer in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let server;
let browser;
let page;
let serverLog = '';

async function shot(name) {
  if (!shots || !page) return;
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

// palette runs a command through F1, the way a user does; it fails when the
// command is not in the palette (a `when` clause hides it).
async function palette(title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 10_000 });
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

// The extension's status-bar item; VS Code gives it the id
// <publisher>.<name>.<item id>.
const statusItem = () => page.locator('[id="bcode-dev.bcode.bcode.evidence"]').first();

async function statusText() {
  return (await statusItem().innerText({ timeout: 5_000 }).catch(() => '')).trim();
}

async function waitStatus(re, ms, what) {
  const end = Date.now() + ms;
  let last = '';
  while (Date.now() < end) {
    last = await statusText();
    if (re.test(last)) return last;
    await page.waitForTimeout(250);
  }
  throw new Error(`${what}: the status bar says "${last}", not ${re}`);
}

async function tasksViewText() {
  return (await page.locator('[id="workbench.view.extension.bcode"], .pane-body').filter({ hasText: /Tasks|tasks|bcode/ }).first().innerText().catch(() => '')).trim();
}

async function main() {
  const port = await freePort();
  await step('install the .vsix', async () => {
    const out = execFileSync(process.execPath, [codeServer, '--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions, '--install-extension', vsix],
      { env: childEnv, encoding: 'utf8', timeout: 60_000 });
    if (!/was successfully installed/.test(out)) throw new Error(`code-server --install-extension: ${out}`);
  });
  // No bcode.serverPath and no bcode-ls on PATH: the extension finds it
  // where `go install` puts it, $(go env GOPATH)/bin.
  writeSettings({});
  installServer();

  await step('start code-server', async () => {
    // code-server's parent waits 10 s for its child's handshake; a busy
    // machine can miss that, and then it exits ("timed out"): start again.
    for (let attempt = 1; ; attempt++) {
      server = spawn(process.execPath, [codeServer,
        '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
        '--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions,
        '--config', path.join(tmp, 'config.yaml'),
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
  });

  await step('open the workspace in chromium', async () => {
    browser = await chromium.launch({ executablePath: browserPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 860 }, deviceScaleFactor: 1 });
    // Every text the extension's status-bar item ever shows, from the
    // first: a poll could miss a short "server off".
    await ctx.addInitScript(statusRecorder);
    page = await ctx.newPage();
    // The machine may be busy (CI runs other tests in parallel): generous
    // waits, each still bounded.
    page.setDefaultTimeout(90_000);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(repo)}`, { waitUntil: 'domcontentloaded', timeout: 120_000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    await page.locator('.statusbar').waitFor();
  });

  await step('open quota/quota.go', async () => {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill('quota/quota.go');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'quota.go' }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.tab.active', { hasText: 'quota.go' }).waitFor();
    await page.locator('.monaco-editor .view-line', { hasText: 'if n <= limit' }).waitFor();
  });

  await step('bcode-ls, found in $GOPATH/bin, runs: the status bar says "starting", never "server off", then the evidence state', async () => {
    await waitStatus(/no evidence yet|mutant|evidence/, 60_000, 'after activation');
    const seen = (await page.evaluate(() => window.__bcodeStatus || [])).filter((t) => t !== '');
    console.log(`note status texts: ${JSON.stringify(seen)}`);
    if (!seen.length || !/starting/.test(seen[0])) throw new Error(`the status bar's first text is not "starting": ${JSON.stringify(seen)}`);
    const off = seen.find((t) => /server off/.test(t));
    if (off) throw new Error(`the status bar said "${off}" during start-up: ${JSON.stringify(seen)}`);
  });

  await step('run evidence: the squiggle on the boundary', async () => {
    await palette('bcode: Run Evidence');
    await page.locator('.monaco-editor .squiggly-warning').first().waitFor({ timeout: 90_000 });
    await waitStatus(/mutants? survives?/, 30_000, 'after evidence');
    await shot('vscode-squiggle');
  });

  await step('hover the squiggle', async () => {
    const squiggle = page.locator('.monaco-editor .squiggly-warning').first();
    const box = await squiggle.boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const hover = page.locator('.monaco-hover', { hasText: /survived/i });
    await hover.first().waitFor({ state: 'visible', timeout: 15_000 });
    const text = await hover.first().innerText();
    if (!/n <= limit|<=/.test(text) || !/bcode/.test(text)) throw new Error(`the hover does not name the mutant: ${text}`);
    await shot('vscode-hover');
  });

  await step('quick fix: Show mutant diff', async () => {
    // The cursor inside the diagnostic's range (the squiggle), then Ctrl+.
    await openQuickFixes(/Show mutant diff/i);
    await shot('vscode-quickfix');
    // At most three quick fixes for the line's mutants, one of them the
    // entry that lists them all.
    const labels = await page.locator('.action-widget .monaco-list-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') || r.innerText));
    const fixes = labels.filter((l) => mutantFix.test(l));
    console.log(`note quick fixes: ${JSON.stringify(fixes)}`);
    if (fixes.length > 3) throw new Error(`${fixes.length} mutant quick fixes on one line: ${JSON.stringify(fixes)}`);
    if (!fixes.some((l) => /Show all surviving mutants on this line/.test(l))) throw new Error(`no "Show all surviving mutants on this line" among ${JSON.stringify(labels)}`);
    await pickAction(/Show mutant diff/i);
    // The mutant's diff is a read-only bcode-mutant: document from bcode-ls,
    // in a tab of its own named after the mutant; its text is the diff.
    await page.locator('.tab.active', { hasText: /\.diff/ }).waitFor({ timeout: 20_000 }).catch(async (e) => {
      const tabs = await page.locator('.tab').evaluateAll((ts) => ts.map((t) => t.innerText.trim()));
      throw new Error(`no active .diff tab after the action; tabs ${JSON.stringify(tabs)}: ${e.message}`);
    });
    // (The editor draws spaces as no-break spaces: \s matches both.)
    await page.locator('.monaco-editor .view-line', { hasText: /^\+\s+if\s+n\s<\slimit/ }).first().waitFor({ timeout: 15_000 });
    await shot('vscode-mutant-diff');
  });

  await step('"Show all surviving mutants on this line": a quick pick of every action, grouped by mutant', async () => {
    await openFile('quota/quota.go', 'if n <= limit');
    await openQuickFixes(/Show all surviving mutants on this line/);
    await pickAction(/Show all surviving mutants on this line/);
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 20_000 });
    await page.locator('.quick-input-list .monaco-list-row', { hasText: /Go to covering test/ }).first().waitFor({ timeout: 10_000 });
    const title = await page.locator('.quick-input-widget .quick-input-title').innerText().catch(() => '');
    if (!/surviving mutants? on line 5/.test(title)) throw new Error(`the picker's title is "${title}"`);
    const rows = await page.locator('.quick-input-list .monaco-list-row').evaluateAll((rs) => rs.map((r) => r.innerText.replace(/\s+/g, ' ').trim()));
    console.log(`note picker: ${JSON.stringify(rows)}`);
    for (const want of [/Show mutant diff/, /Add a test for this boundary/, /Go to covering test TestAllowed/, /Ignore this mutant/]) {
      if (!rows.some((r) => want.test(r))) throw new Error(`the picker has no ${want}: ${JSON.stringify(rows)}`);
    }
    if (!rows.some((r) => /n <= limit.*n < limit/.test(r))) throw new Error(`the picker does not name the mutant: ${JSON.stringify(rows)}`);
    await shot('vscode-mutant-picker');
    // Go to the covering test: its file opens.
    await input.fill('Go to covering test');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Go to covering test TestAllowed' }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.tab.active', { hasText: 'quota_test.go' }).waitFor({ timeout: 15_000 });
  });

  await step('Preview Context Pack: a progress notification with Cancel; cancelling stops it quietly', async () => {
    await openFile('quota/quota.go', 'if n <= limit');
    // A model server that accepts and never answers, where bcode looks
    // for one by default: the pack waits for its tokenizer, long enough
    // to press Cancel (when the port is taken, the pack may end first).
    const tarpit = await listenTarpit(8080);
    try {
      await palette('bcode: Preview Context Pack');
      const toast = page.locator('.notification-toast', { hasText: /building the context pack/ }).first();
      await toast.waitFor({ state: 'visible', timeout: 20_000 });
      await page.waitForTimeout(300); // the toast's fade-in, for the picture
      await shot('vscode-pack-progress');
      let cancelled = false;
      try {
        await toast.locator('.monaco-button, .action-label', { hasText: /^Cancel$/ }).first().click({ timeout: 5_000 });
        cancelled = true;
      } catch (e) {
        if (await toast.isVisible().catch(() => false)) throw e;
        console.log('note the pack was built before Cancel could be pressed');
      }
      if (cancelled) {
        console.log('note the pack preview was cancelled from its notification');
      await toast.waitFor({ state: 'hidden', timeout: 10_000 });
        await page.waitForTimeout(1500);
        const errors = await page.locator('.notification-toast', { hasText: /bcode: .*(failed|cancel|error)/i }).count();
        if (errors) throw new Error(`a cancelled preview left ${errors} message(s): ${await page.locator('.notification-toast').first().innerText()}`);
        if (await page.locator('.tab', { hasText: /\.md\b/ }).count()) throw new Error('a cancelled preview opened the pack');
      }
    } finally {
      tarpit?.close();
    }
    // Not cancelled, it opens the pack.
    await palette('bcode: Preview Context Pack');
    await page.locator('.tab.active', { hasText: /\.md/ }).waitFor({ timeout: 60_000 });
    await page.locator('.monaco-editor .view-line', { hasText: /Context pack|quota/ }).first().waitFor({ timeout: 15_000 });
  });

  await step('an untitled buffer: Preview Context Pack says it needs a file, once', async () => {
    // The palette's own command (not "Compare New Untitled Text Files").
    await page.keyboard.press('F1');
    await page.locator('.quick-input-widget input').fill('>File: New Untitled Text File');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: /^File: New Untitled Text File/ }).first().waitFor({ timeout: 10_000 });
    for (let i = 0; ; i++) {
      const focused = (await page.locator('.quick-input-list .monaco-list-row.focused').first().innerText().catch(() => '')).trim();
      if (/^File: New Untitled Text File/.test(focused)) break;
      if (i > 10) throw new Error(`no "File: New Untitled Text File" in the palette (focus on "${focused}")`);
      await page.keyboard.press('ArrowDown');
    }
    await page.keyboard.press('Enter');
    await page.locator('.tab.active', { hasText: /^\s*Untitled-\d+\s*$/ }).waitFor({ timeout: 15_000 });
    await palette('bcode: Preview Context Pack');
    const says = /Preview Context Pack works on files of the workspace; this editor shows an untitled buffer/;
    const toast = page.locator('.notification-toast', { hasText: says });
    await toast.first().waitFor({ state: 'visible', timeout: 15_000 });
    await page.waitForTimeout(1000);
    const n = await page.locator('.notification-toast', { hasText: /bcode:/ }).count();
    if (n !== 1) throw new Error(`${n} bcode messages for one refusal`);
    // Expanded, so the picture shows the whole sentence.
    await toast.first().locator('.codicon-notifications-expand').first().click({ timeout: 3_000 }).catch(() => {});
    await shot('vscode-pack-untitled');
    await page.keyboard.press('Escape');
    await palette('View: Revert and Close Editor');
  });

  await step('the Tasks view lists the tasks', async () => {
    await page.locator('.activitybar .action-item a[aria-label^="bcode"], .activitybar .action-label[aria-label^="bcode"]').first().click();
    const rows = page.locator('[id="workbench.view.extension.bcode"] .monaco-list-row, .pane-body .monaco-list-row');
    await page.locator('.monaco-list-row', { hasText: 'Add a test for the boundary of Allowed at the limit' }).waitFor({ timeout: 20_000 });
    // Widen the side bar by its sash, as a user would to read the rows.
    const bar = await page.locator('.part.sidebar').boundingBox();
    await page.mouse.move(bar.x + bar.width + 1, bar.y + bar.height / 2);
    await page.mouse.down();
    await page.mouse.move(bar.x + bar.width + 330, bar.y + bar.height / 2, { steps: 8 });
    await page.mouse.up();
    await page.locator('.monaco-list-row', { hasText: 'Make Allowed count bursts' }).waitFor();
    await page.locator('.monaco-list-row', { hasText: 'Document quota semantics' }).waitFor();
    if ((await rows.count()) < 3) throw new Error('fewer than 3 rows in the Tasks view');
  });

  await step('a failed task says why', async () => {
    const row = page.locator('.monaco-list-row', { hasText: 'Make Allowed count bursts' }).first();
    const desc = await row.innerText();
    if (!/failed/.test(desc) || !/passes on the base commit/.test(desc)) throw new Error(`the failed row does not say why: ${desc}`);
    const tabs = await page.locator('.tab').count();
    await row.click();
    await page.locator('.monaco-list-row', { hasText: /Why: the new test passes on the base commit too, so it proves nothing/ }).waitFor({ timeout: 10_000 });
    await page.locator('.monaco-list-row', { hasText: 'Changes' }).first().waitFor();
    await page.waitForTimeout(500);
    const after = await page.locator('.tab').count();
    if (after !== tabs) throw new Error(`a click on a task opened ${after - tabs} editors: it should only expand it`);
    await shot('vscode-tasks-failed');
    void failedTask;
  });

  await step('a tampered task names what was tampered with, with its test table', async () => {
    // The failed task folded again, so the rows below fit.
    await page.locator('.monaco-list-row', { hasText: 'Make Allowed count bursts' }).first().click();
    const row = page.locator('.monaco-list-row', { hasText: 'Make Allowed faster' }).first();
    await row.waitFor({ timeout: 15_000 });
    const desc = await row.innerText();
    if (!/failed/.test(desc) || !/tampered/.test(desc)) throw new Error(`the tampered row says: ${desc}`);
    await row.click();
    await page.locator('.monaco-list-row', { hasText: 'Check: tampered with quota/quota_test.go:5: TestAllowed is deleted (+1 more)' }).waitFor({ timeout: 15_000 });
    await page.locator('.monaco-list-row', { hasText: 'Tampered: quota/fast_test.go:9: TestAllowedBurst calls t.Skip' }).waitFor();
    const test = page.locator('.monaco-list-row', { hasText: 'TestAllowedFast' }).first();
    await test.waitFor();
    const t = await test.innerText();
    if (!/base fail → head pass · credited/.test(t)) throw new Error(`the test row says: ${t}`);
    await shot('vscode-tasks-tampered');
    void tamperedTask;
  });

  await step('restart bcode-ls: the status bar and the Tasks view recover', async () => {
    await palette('bcode: Restart Language Server');
    const end = Date.now() + 30_000;
    let seen = '';
    // It must come back to an evidence state, not stay at "server off".
    for (;;) {
      seen = await statusText();
      if (/no evidence yet|mutants? survives?|mutants killed|no mutants/.test(seen)) break;
      if (Date.now() > end) throw new Error(`after a restart the status bar says "${seen}"`);
      await page.waitForTimeout(250);
    }
    await page.locator('.monaco-list-row', { hasText: 'Make Allowed count bursts' }).waitFor({ timeout: 15_000 });
    if (await page.locator('.monaco-list-row', { hasText: /bcode-ls stopped/ }).count()) throw new Error('the Tasks view still says bcode-ls stopped');
    await shot('vscode-restarted');
  });

  await step('bcode-ls missing: a toast with the install line', async () => {
    fs.rmSync(installed);
    await palette('bcode: Restart Language Server');
    const toast = page.locator('.notification-toast', { hasText: installLine });
    await toast.first().waitFor({ state: 'visible', timeout: 20_000 });
    const text = await toast.first().innerText();
    if (!text.includes(path.join(dirs.gopath, 'bin'))) throw new Error(`the toast does not say where it looked: ${text}`);
    await waitStatus(/server off/, 10_000, 'with bcode-ls missing');
    await shot('vscode-missing-server');
  });

  await step('installed into $GOPATH/bin, the toast\'s Restart starts it', async () => {
    // What `go install` does: the binary lands in $(go env GOPATH)/bin,
    // which is not on the editor's PATH.
    installServer();
    // The toast's own Restart button. The workbench may re-render the
    // toast (a detached element): find it again and retry, a few times.
    for (let i = 0; ; i++) {
      try {
        await page.locator('.notification-toast', { hasText: installLine }).last()
          .locator('.monaco-button', { hasText: /^Restart$/ }).click({ timeout: 10_000 });
        break;
      } catch (e) {
        if (i === 3) throw e;
      }
    }
    await waitStatus(/no evidence yet|mutants? survives?|mutants killed|no mutants/, 30_000, 'after Restart');
    await page.locator('.monaco-list-row', { hasText: 'Make Allowed count bursts' }).waitFor({ timeout: 15_000 });
    await shot('vscode-recovered');
  });

  if (flowRepo) await taskFlow(port);

  await step("the bcode output channel: bcode-ls's INFO lines at info, not error", async () => {
    const logs = findFiles(path.join(dirs.userData, 'logs'), /^bcode\.log$/);
    if (logs.length === 0) throw new Error('no bcode output channel log under the user data dir');
    const lines = logs.flatMap((f) => fs.readFileSync(f, 'utf8').split('\n'));
    const info = lines.filter((l) => / level=INFO /.test(l));
    if (info.length === 0) throw new Error(`no INFO line from bcode-ls in the log:\n${lines.join('\n')}`);
    const wrong = info.filter((l) => !/\[info\] /.test(l));
    if (wrong.length) throw new Error(`INFO lines logged at another level:\n${wrong.join('\n')}`);
  });
}

// The task flow (BCODE_FLOW_REPO set: a clean checkout whose base config
// names the scripted model and the sandbox image; bcode-ls finds
// bcode-agent through BCODE_AGENT): select code, run the code action, type
// the goal, watch the row run, accept from the end's notification.
const flowRepo = process.env.BCODE_FLOW_REPO || '';
const flowGoal = 'Start the discount after 10 items, not at 10';

// notificationButton clicks a button of the notification whose text
// matches re: on its toast, else in the notification center (a toast
// hides after a while).
async function notificationButton(re, button, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const toast = page.locator('.notification-toast', { hasText: re }).last();
    if (await toast.isVisible().catch(() => false)) {
      await toast.locator('.monaco-button', { hasText: button }).click({ timeout: 10_000 });
      return;
    }
    const item = page.locator('.notifications-center .notification-list-item', { hasText: re }).last();
    if (await item.isVisible().catch(() => false)) {
      await item.locator('.monaco-button', { hasText: button }).click({ timeout: 10_000 });
      return;
    }
    if (Date.now() > end) throw new Error(`no notification matching ${re} in ${ms} ms`);
    // Look in the center now and then: the toast may have come and gone.
    if ((end - Date.now()) % 30_000 < 1_000) await palette('Notifications: Show Notifications').catch(() => {});
    await page.waitForTimeout(1000);
  }
}

// notificationText waits for a notification matching re (toast or
// center) and returns its text.
async function notificationText(re, ms) {
  const end = Date.now() + ms;
  for (let i = 0; ; i++) {
    for (const sel of ['.notification-toast', '.notifications-center .notification-list-item']) {
      const n = page.locator(sel, { hasText: re }).last();
      if (await n.isVisible().catch(() => false)) return n.innerText();
    }
    if (Date.now() > end) throw new Error(`no notification matching ${re} in ${ms} ms`);
    if (i % 30 === 29) await palette('Notifications: Show Notifications').catch(() => {});
    await page.waitForTimeout(1000);
  }
}

async function taskFlow(port) {
  let id = '';
  await step('task flow: open a clean checkout and price/price.go', async () => {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(flowRepo)}`, { waitUntil: 'domcontentloaded', timeout: 120_000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill('price/price.go');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'price.go' }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.monaco-editor .view-line', { hasText: 'func Discount' }).waitFor();
    await waitStatus(/no evidence yet|mutant|evidence/, 60_000, 'bcode-ls on the task checkout');
  });

  await step('task flow: select the function, Ctrl+. → Create task from selection', async () => {
    await page.locator('.monaco-editor .view-line', { hasText: 'func Discount' }).click();
    await page.keyboard.press('Home');
    await page.keyboard.press('Home');
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+End');
    const item = page.locator('.action-widget .monaco-list-row', { hasText: /Create task from selection/ }).first();
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
    for (let i = 0; ; i++) {
      const focused = (await page.locator('.action-widget .monaco-list-row.focused').first().getAttribute('aria-label')) || '';
      if (/Create task from selection/.test(focused)) break;
      if (i > 12) throw new Error(`no "Create task from selection" among the code actions (focus on "${focused}")`);
      await page.keyboard.press('ArrowDown');
    }
    await shot('vscode-create-task-action');
    await page.keyboard.press('Enter');
  });

  await step('task flow: the input box offers a goal from the selection; type ours', async () => {
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 20_000 });
    const offered = await input.inputValue();
    if (!/^Change price\/price\.go lines 4-6: func Discount/.test(offered)) throw new Error(`the input box offers "${offered}"`);
    await shot('vscode-create-task-goal');
    await input.fill(flowGoal);
    await page.keyboard.press('Enter');
    // One notification that closes by itself once the run gets going (or
    // cannot start): no "created and started" toast. A fast start may
    // close it before it is seen; the end's notification names the task.
    const toast = page.locator('.notification-toast', { hasText: /task \w+ created, starting its run/ }).first();
    try {
      await toast.waitFor({ timeout: 15_000 });
      id = /task (\w+) created/.exec(await toast.innerText())[1];
    } catch {
      console.log('note the start notification closed before it was seen');
    }
  });

  await step('task flow: the Tasks view shows it running, with its attempt', async () => {
    await page.locator('.activitybar .action-item a[aria-label^="bcode"], .activitybar .action-label[aria-label^="bcode"]').first().click();
    const row = page.locator('.monaco-list-row', { hasText: flowGoal }).first();
    await row.waitFor({ timeout: 30_000 });
    const end = Date.now() + 300_000;
    let text = '';
    for (;;) {
      text = await row.innerText().catch(() => '');
      if (/running · attempt 1/.test(text) || /verified/.test(text)) break;
      if (Date.now() > end) throw new Error(`the row says "${text}"`);
      await page.waitForTimeout(500);
    }
    if (!/running · attempt 1/.test(text)) throw new Error(`the row never showed the running attempt: "${text}"`);
    console.log(`note row: ${text.replace(/\n/g, ' ')}`);
    await shot('vscode-task-running');
  });

  await step('task flow: it ends verified; the notification\'s Accept lands it', async () => {
    // Any end: one that is not verified fails here with what it says.
    const ended = new RegExp(`task ${id || '\\w+'} "${flowGoal}" is (verified|blocked|failed)`);
    const text = await notificationText(ended, 600_000);
    id = id || /task (\w+) /.exec(text)[1];
    if (!/is verified/.test(text)) throw new Error(`the task ended: ${text}`);
    await notificationButton(ended, /^Accept$/, 60_000);
    await shot('vscode-task-verified');
    const dialog = page.locator('.monaco-dialog-box', { hasText: `Accept task ${id}?` });
    await dialog.waitFor({ timeout: 20_000 });
    const said = await dialog.innerText();
    if (!/fast-forwarded/.test(said)) throw new Error(`the accept dialog does not say what happens: ${said}`);
    await dialog.locator('.monaco-button', { hasText: /^Accept$/ }).click();
    // A toast, or in the notification center when that is open.
    await notificationText(new RegExp(`task ${id} is accepted`), 60_000);
    const src = fs.readFileSync(path.join(flowRepo, 'price', 'price.go'), 'utf8');
    if (!src.includes('n > 10')) throw new Error(`main's price.go after accept:\n${src}`);
    await page.locator('.monaco-list-row', { hasText: flowGoal }).filter({ hasText: /accepted/ }).first().waitFor({ timeout: 20_000 });
    await shot('vscode-task-accepted');
  });
}

// The quick fixes a surviving mutant's line offers (their titles).
const mutantFix = /Show mutant diff|Add a test for this boundary|Show all surviving mutants|Go to covering test|Run the covering tests|Ignore this mutant/;

// openFile opens rel with Ctrl+P and waits for a line with text.
async function openFile(rel, text) {
  const name = path.basename(rel);
  const tab = page.locator('.tab', { has: page.locator('.label-name', { hasText: new RegExp(`^${name.replace(/\./g, '\\.')}$`) }) }).first();
  if (await tab.count()) {
    await tab.click();
  } else {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(rel);
    // Enter only once the filtered list has the file in focus (before,
    // Enter opens the editor history's first entry).
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: name }).first().waitFor();
    await page.keyboard.press('Enter');
  }
  await page.locator('.tab.active', { hasText: path.basename(rel) }).waitFor();
  await page.locator('.monaco-editor .view-line', { hasText: text }).first().waitFor();
}

// openQuickFixes puts the cursor on the squiggle and opens Ctrl+.'s menu
// until a row matching re shows (a busy machine: the actions may be late).
async function openQuickFixes(re) {
  // The editor draws its decorations after it shows the text: on a busy
  // machine, back on an open tab, the squiggle's element comes late.
  const squiggles = page.locator('.monaco-editor .squiggly-warning').first();
  await squiggles.waitFor({ state: 'visible', timeout: 30_000 });
  let squiggle = await squiggles.boundingBox();
  for (let i = 0; !squiggle && i < 20; i++) {
    await page.waitForTimeout(500);
    squiggle = await squiggles.boundingBox();
  }
  if (!squiggle) throw new Error('the squiggle is in the page but never on screen');
  await page.mouse.click(squiggle.x + squiggle.width / 2, squiggle.y + squiggle.height / 2);
  await page.mouse.move(10, 10);
  const item = page.locator('.action-widget .monaco-list-row', { hasText: re }).first();
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('Control+.');
    try {
      await item.waitFor({ state: 'visible', timeout: 10_000 });
      return;
    } catch (e) {
      if (attempt === 3) throw e;
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1000);
    }
  }
}

// pickAction moves the focus of Ctrl+.'s menu to the row matching re with
// the keyboard, as a user of Ctrl+. does (the menu's pointer guard
// swallows synthetic clicks), and runs it.
async function pickAction(re) {
  for (let i = 0; ; i++) {
    const focused = (await page.locator('.action-widget .monaco-list-row.focused').first().getAttribute('aria-label')) || '';
    if (re.test(focused)) break;
    if (i > 12) throw new Error(`no ${re} among the code actions (focus on "${focused}")`);
    await page.keyboard.press('ArrowDown');
  }
  await page.keyboard.press('Enter');
}

// listenTarpit accepts connections on 127.0.0.1:port and never answers;
// undefined when the port is taken.
function listenTarpit(port) {
  return new Promise((resolve) => {
    const held = [];
    const s = net.createServer((c) => { held.push(c); c.on('error', () => {}); });
    s.once('error', () => resolve(undefined));
    s.listen(port, '127.0.0.1', () => resolve({ close: () => { for (const c of held) c.destroy(); s.close(); } }));
  });
}

// statusRecorder runs in the page before VS Code does: it records each
// new text of the extension's status-bar item in window.__bcodeStatus.
function statusRecorder() {
  if (window.top !== window) return;
  const seen = [];
  window.__bcodeStatus = seen;
  let last = null;
  const look = () => {
    const el = document.getElementById('bcode-dev.bcode.bcode.evidence');
    const text = el ? (el.textContent || '').trim() : null;
    if (text !== null && text !== last) {
      last = text;
      seen.push(text);
    }
  };
  new MutationObserver(look).observe(document, { subtree: true, childList: true, characterData: true });
}

function findFiles(dir, re) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && re.test(e.name)) out.push(path.join(e.parentPath ?? e.path, e.name));
  }
  return out;
}

let failed = false;
try {
  await main();
  console.log(`ok ${Date.now() - started} ms`);
} catch (e) {
  failed = true;
  console.log(`fail ${current}: ${e.stack || e}`);
  try { await shot(`fail-${current.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`); } catch { /* best effort */ }
  for (const f of findFiles(path.join(dirs.userData, 'logs'), /bcode\.log$/)) {
    console.log(`--- ${path.relative(tmp, f)} (tail)`);
    console.log(fs.readFileSync(f, 'utf8').split('\n').slice(-30).join('\n'));
  }
  console.log('--- code-server log (tail)');
  console.log(serverLog.split('\n').slice(-40).join('\n'));
} finally {
  await browser?.close().catch(() => {});
  server?.kill('SIGTERM');
  if (process.env.BCODE_E2E_KEEP) console.log(`kept ${tmp}`);
  else fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
}
process.exit(failed ? 1 : 0);
