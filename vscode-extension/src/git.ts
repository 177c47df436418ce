// The one git query the extension makes itself: the state of the user's
// checkout, for the Accept confirmation (which branch moves and how, and
// whether bcode will refuse a dirty tree). It only reads. A task's diff
// comes from bcode-ls (bcode/taskDiff), never from git here.
import { execFile } from 'child_process';
import { CheckoutState } from './tasksModel';

function git(repo: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', ['-c', 'core.quotepath=false', ...args], { cwd: repo, maxBuffer: 1 << 20, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${args.join(' ')}: ${(stderr || err.message).trim()}`));
      else resolve(stdout);
    });
  });
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
