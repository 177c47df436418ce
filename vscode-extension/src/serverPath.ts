// Finding bcode-ls: the bcode.serverPath setting, else PATH, else where
// `go install` puts it ($(go env GOPATH)/bin, ~/go/bin): the extension
// host's PATH is often the desktop's, without the Go bin directory.
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/**
 * The command that installs bcode-ls (and this extension) from bcode's
 * checkout; *Copy Install Command* copies it. The module is not published,
 * so `go install …@latest` cannot install it.
 */
export const installCommand = 'editors/install.sh vscode';

/** Where and how to install bcode-ls; every "not found" says it. */
export const installHint = `in bcode's checkout: ${installCommand} (or go install ./cmd/...)`;

export type Resolved = { ok: true; path: string } | { ok: false; message: string; fix: string };

function executable(p: string): boolean {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) return false;
    if (process.platform === 'win32') return true;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * resolveServer finds the bcode-ls executable. A setting with a path
 * separator is a file (relative to the workspace folder); a bare name is
 * looked up on PATH. The failure says exactly what to do.
 */
export function resolveServer(setting: string | undefined, pathEnv: string | undefined, workspaceDir?: string, goBins: string[] = []): Resolved {
  const name = (setting ?? '').trim() || 'bcode-ls';
  const install = `Install it ${installHint}, which puts it in $(go env GOPATH)/bin, or set "bcode.serverPath" to the full path of bcode-ls.`;
  if (name.includes('/') || name.includes('\\')) {
    let p = name.startsWith('~') ? path.join(process.env.HOME ?? '', name.slice(1)) : name;
    if (!path.isAbsolute(p) && workspaceDir) p = path.join(workspaceDir, p);
    if (executable(p)) return { ok: true, path: p };
    return { ok: false, message: `bcode-ls was not found at "${p}" (the bcode.serverPath setting), or it is not executable.`, fix: install };
  }
  const exts = process.platform === 'win32' ? ['', '.exe'] : [''];
  for (const dir of [...(pathEnv ?? '').split(path.delimiter), ...goBins]) {
    if (!dir) continue;
    for (const ext of exts) {
      const p = path.join(dir, name + ext);
      if (executable(p)) return { ok: true, path: p };
    }
  }
  return { ok: false, message: `bcode-ls ("${name}") is not on PATH${goBins.length ? ` nor in ${goBins.join(', ')}` : ''}, so bcode's diagnostics, tasks and context packs are off.`, fix: install };
}

/**
 * goBinDirs are the directories `go install` writes to: $GOBIN, each
 * $(go env GOPATH)/bin, and ~/go/bin (GOPATH's default). `go env` runs in
 * the home directory with GOTOOLCHAIN=local, never in the workspace: a
 * workspace's go.mod could otherwise make go download and run a toolchain.
 */
export async function goBinDirs(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): Promise<string[]> {
  const dirs: string[] = [];
  const add = (d: string | undefined) => { if (d && !dirs.includes(d)) dirs.push(d); };
  add(env.GOBIN);
  const fromGo = await new Promise<string>((resolve) => {
    execFile('go', ['env', 'GOBIN', 'GOPATH'], { cwd: home || os.tmpdir(), timeout: 5000, env: { ...env, GOTOOLCHAIN: 'local', GOFLAGS: '' } },
      (err, stdout) => resolve(err ? '' : stdout));
  });
  const [gobin, gopath] = fromGo.split('\n');
  add(gobin?.trim() || undefined);
  for (const p of (gopath?.trim() || env.GOPATH || '').split(path.delimiter)) if (p) add(path.join(p, 'bin'));
  if (home) add(path.join(home, 'go', 'bin'));
  return dirs;
}
