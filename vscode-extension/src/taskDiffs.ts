// A task's change as bcode-ls reads it (bcode/taskDiff): the changed files
// for the Tasks view and both sides of each file for VS Code's diff editor.
// The extension never runs git for a diff. No vscode import, so node --test
// checks it directly.
import { BcodeApi } from './api';
import { FileDiff, TaskDiffResult } from './protocol';

export type Side = 'base' | 'head';

/**
 * TaskDiffs caches bcode/taskDiff answers per task until the task changes
 * (forget), so the tree and the two sides of a diff share one request.
 */
export class TaskDiffs {
  private readonly whole = new Map<string, Promise<TaskDiffResult>>();
  private readonly single = new Map<string, Promise<FileDiff>>();

  constructor(private readonly api: () => BcodeApi | undefined) {}

  private need(): BcodeApi {
    const api = this.api();
    if (!api) throw new Error('bcode-ls is not running: see the bcode output channel');
    return api;
  }

  /** task is the whole change of a task (files past the server's budget come without contents). */
  task(id: string): Promise<TaskDiffResult> {
    let p = this.whole.get(id);
    if (!p) {
      p = this.need().taskDiff(id);
      p.catch(() => this.whole.delete(id)); // a failure is not cached
      this.whole.set(id, p);
    }
    return p;
  }

  /** file is one changed file with its contents, asked for by path when the whole answer left them out. */
  async file(id: string, path: string): Promise<FileDiff> {
    const w = this.whole.get(id);
    if (w) {
      const f = (await w.catch(() => undefined))?.files.find((x) => x.path === path);
      if (f && f.omitted !== 'budget') return f;
    }
    const key = `${id}\0${path}`;
    let p = this.single.get(key);
    if (!p) {
      p = this.need().taskDiff(id, path).then((r) => {
        const f = r.files.find((x) => x.path === path);
        if (!f) throw new Error(`task ${id} does not change ${path}`);
        return f;
      });
      p.catch(() => this.single.delete(key));
      this.single.set(key, p);
    }
    return p;
  }

  /** forget drops what is cached for a task (it changed). */
  forget(id?: string): void {
    if (id === undefined) {
      this.whole.clear();
      this.single.clear();
      return;
    }
    this.whole.delete(id);
    for (const k of [...this.single.keys()]) if (k.startsWith(id + '\0')) this.single.delete(k);
  }
}

function size(n: number): string {
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

/**
 * sideText is what one side of the diff editor shows: the file's text, ""
 * where the file does not exist, and for a binary, large or submodule
 * change a sentence saying so (with that side's size), never megabytes.
 */
export function sideText(f: FileDiff, side: Side): string {
  const exists = side === 'base' ? f.status !== 'A' : f.status !== 'D';
  if (!exists) return '';
  if (f.omitted && f.omitted !== 'budget') {
    const n = side === 'base' ? f.baseSize : f.headSize;
    return `bcode: not shown here: ${f.note ?? `${f.path} (${f.omitted})`}\n${side === 'base' ? 'base' : 'task branch'} side: ${size(n)}\n`;
  }
  return (side === 'base' ? f.baseContent : f.headContent) ?? '';
}
