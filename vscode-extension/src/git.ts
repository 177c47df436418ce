// Read-only git queries the Tasks view needs: a task's changed files and
// their contents on both sides, and the state of the user's checkout for the
// Accept confirmation. Nothing here writes to the repository.
import { execFile } from 'child_process';
import { CheckoutState } from './tasksModel';

export interface ChangedFile { status: string; path: string }

function git(repo: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', ['-c', 'core.quotepath=false', ...args], { cwd: repo, maxBuffer: 64 << 20, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${args.join(' ')}: ${(stderr || err.message).trim()}`));
      else resolve(stdout);
    });
  });
}

/** changedFiles lists what a task changed: base..branch, one entry per file. */
export async function changedFiles(repo: string, base: string, branch: string): Promise<ChangedFile[]> {
  let out: string;
  try {
    out = await git(repo, ['diff', '--name-status', '-z', '--no-renames', base, branch, '--']);
  } catch (e) {
    throw new Error(`cannot diff the task's branch ${branch} against its base ${base.slice(0, 7)}: ${(e as Error).message}`);
  }
  const parts = out.split('\0').filter((s) => s !== '');
  const files: ChangedFile[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) files.push({ status: parts[i], path: parts[i + 1] });
  return files;
}

/** show is a file's content at a revision; "" when the file is not there. */
export async function show(repo: string, rev: string, path: string): Promise<string> {
  try {
    return await git(repo, ['show', `${rev}:${path}`]);
  } catch {
    return '';
  }
}

/** checkoutState is what Accept will do to: the branch, HEAD, dirtiness. */
export async function checkoutState(repo: string, base: string, branch: string): Promise<CheckoutState> {
  const head = (await git(repo, ['rev-parse', 'HEAD'])).trim();
  let name: string | undefined;
  try {
    name = (await git(repo, ['symbolic-ref', '--short', '-q', 'HEAD'])).trim() || undefined;
  } catch {
    name = undefined;
  }
  const dirty = (await git(repo, ['status', '--porcelain', '--untracked-files=no'])).trim() !== '';
  let commits = 0;
  try {
    commits = Number((await git(repo, ['rev-list', '--count', `${base}..${branch}`])).trim()) || 0;
  } catch {
    commits = 0;
  }
  return { branch: name, head, dirty, commits };
}
