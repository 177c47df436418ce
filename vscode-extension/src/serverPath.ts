// Finding bcode-ls: the bcode.serverPath setting, else PATH.
import * as fs from 'fs';
import * as path from 'path';

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
export function resolveServer(setting: string | undefined, pathEnv: string | undefined, workspaceDir?: string): Resolved {
  const name = (setting ?? '').trim() || 'bcode-ls';
  const install = 'Install it with `go install github.com/bcode-dev/bcode/cmd/bcode-ls@latest` (it lands in $(go env GOPATH)/bin), or set "bcode.serverPath" to the full path of bcode-ls.';
  if (name.includes('/') || name.includes('\\')) {
    let p = name.startsWith('~') ? path.join(process.env.HOME ?? '', name.slice(1)) : name;
    if (!path.isAbsolute(p) && workspaceDir) p = path.join(workspaceDir, p);
    if (executable(p)) return { ok: true, path: p };
    return { ok: false, message: `bcode-ls was not found at "${p}" (the bcode.serverPath setting), or it is not executable.`, fix: install };
  }
  const exts = process.platform === 'win32' ? ['', '.exe'] : [''];
  for (const dir of (pathEnv ?? '').split(path.delimiter)) {
    if (!dir) continue;
    for (const ext of exts) {
      const p = path.join(dir, name + ext);
      if (executable(p)) return { ok: true, path: p };
    }
  }
  return { ok: false, message: `bcode-ls ("${name}") is not on PATH, so bcode's diagnostics, tasks and context packs are off.`, fix: install };
}
