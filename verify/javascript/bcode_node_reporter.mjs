// bcode's reporter for node --test (Node 20+): one JSON line per test
// result, suite result and test file that failed to load, with the path of
// names that led to it. Written by bcode into a scratch directory for each
// run; the repository's own reporters are never used.
//
// Each line is appended to the file BCODE_TEST_LOG names as it is known,
// synchronously: under --test-force-exit node may end the process before
// a reporter destination's stream is flushed, losing the last results.
// Without BCODE_TEST_LOG the lines are yielded to the destination.

import signedLog from './bcode-signed-log.cjs';

const { write } = signedLog;

const stacks = new Map(); // file -> names by nesting
const stderr = new Map(); // file -> what it wrote to stderr (a load failure's reason)

function errorText(err) {
  if (!err) return '';
  let e = err;
  if (e.code === 'ERR_TEST_FAILURE' && e.cause !== undefined) e = e.cause;
  if (e instanceof Error || (e && typeof e.message === 'string')) {
    const name = e.name || 'Error';
    return `${name}: ${e.message}`;
  }
  try { return String(e); } catch { return 'unprintable error'; }
}

export default async function* bcodeReporter(source) {
  for await (const ev of source) {
    const d = ev.data || {};
    switch (ev.type) {
      case 'test:start': {
        const names = stacks.get(d.file) || [];
        names.length = d.nesting;
        names[d.nesting] = d.name;
        stacks.set(d.file, names);
        break;
      }
      case 'test:stderr':
      case 'test:stdout': {
        if (d.file) {
          const s = (stderr.get(d.file) || '') + String(d.message);
          stderr.set(d.file, s.length > 8192 ? s.slice(-8192) : s);
        }
        break;
      }
      case 'test:pass':
      case 'test:fail': {
        const det = d.details || {};
        const err = det.error;
        const names = (stacks.get(d.file) || []).slice(0, d.nesting);
        const rec = {
          file: d.file || '',
          path: [...names, d.name],
          outcome: ev.type === 'test:pass' ? 'pass' : 'fail',
          suite: det.type === 'suite',
          ms: det.duration_ms || 0,
        };
        if (d.skip !== undefined && d.skip !== false) { rec.outcome = 'skip'; rec.reason = d.skip === true ? '' : String(d.skip); }
        if (d.todo !== undefined && d.todo !== false) { rec.outcome = 'todo'; rec.reason = d.todo === true ? '' : String(d.todo); }
        if (err) { rec.error = errorText(err); rec.failure = err.failureType || ''; }
        // A file's process that a signal ended: node puts the signal on the
        // file's failure, and SIGXCPU is the kernel's CPU limit (a loop).
        if (err && typeof err.signal === 'string') rec.signal = err.signal;
        if (d.nesting === 0 && d.file && d.name === d.file) {
          rec.load = true; // the file itself: it did not load, or its process failed
          rec.output = stderr.get(d.file) || '';
        }
        if (!write(rec)) yield JSON.stringify(rec) + '\n';
        break;
      }
    }
  }
}
