// bcode's reporter for vitest: one JSON line per test result and per test
// file that failed to load, in the format of bcode's node --test reporter,
// appended to the file BCODE_TEST_LOG names. vitest 3 reports through the
// Reporter API's onTestCaseResult and onTestRunEnd; vitest 1 and 2, which
// have neither, through onFinished's task tree. Written by bcode into a
// scratch directory for each run; the repository's own reporters are
// never used.

import signedLog from './bcode-signed-log.cjs';

const { write } = signedLog;

function errorText(errs) {
  return (errs || []).map((e) => `${e.name || 'Error'}: ${e.message}`).join('\n');
}

function timedOut(errs) {
  return (errs || []).some((e) => /^Test timed out in \d+ms/.test(String(e.message)));
}

const loaded = new Set(); // files whose load failure is written

function writeLoad(file, errs) {
  if (!errs || errs.length === 0 || loaded.has(file)) return;
  loaded.add(file);
  write({ file, path: [file], outcome: 'fail', load: true, error: errorText(errs) });
}

// writeTasks writes the tests below a vitest 1/2 task.
function writeTasks(task, file, names) {
  for (const t of task.tasks || []) {
    if (t.type === 'suite') {
      writeTasks(t, file, [...names, t.name]);
      continue;
    }
    const r = t.result || {};
    const rec = { file, path: [...names, t.name], outcome: 'pass', ms: r.duration || 0 };
    if (t.mode === 'todo') {
      rec.outcome = 'todo';
    } else if (r.state === 'skip' || (t.mode === 'skip' && !r.state)) {
      rec.outcome = 'skip';
      rec.reason = r.note || '';
    } else if (r.state === 'fail') {
      rec.outcome = 'fail';
      rec.error = errorText(r.errors);
      if (timedOut(r.errors)) rec.failure = 'testTimeoutFailure';
    } else if (r.state !== 'pass') {
      continue; // it did not run
    }
    write(rec);
  }
}

export default class BcodeVitestReporter {
  constructor() {
    this.sawCase = false;
    this.sawUnhandled = false;
  }

  // writeUnhandled writes errors thrown outside every test (a timer's, an
  // unhandled rejection's) as a load failure of no file.
  writeUnhandled(errs) {
    if (this.sawUnhandled || !errs || errs.length === 0) return;
    this.sawUnhandled = true;
    write({ file: '', path: ['unhandled error'], outcome: 'fail', load: true, error: errorText(errs) });
  }

  onFinished(files, errors) {
    for (const f of files || []) {
      if (!this.sawCase) writeTasks(f, f.filepath, []);
      writeLoad(f.filepath, f.result && f.result.errors);
    }
    this.writeUnhandled(errors);
  }

  onTestCaseResult(tc) {
    this.sawCase = true;
    const names = [];
    for (let p = tc.parent; p && p.type === 'suite'; p = p.parent) names.unshift(p.name);
    names.push(tc.name);
    const r = tc.result();
    const d = typeof tc.diagnostic === 'function' ? tc.diagnostic() : undefined;
    const rec = { file: tc.module.moduleId, path: names, outcome: 'pass', ms: (d && d.duration) || 0 };
    switch (r.state) {
      case 'passed':
        break;
      case 'failed':
        rec.outcome = 'fail';
        rec.error = errorText(r.errors);
        if (timedOut(r.errors)) rec.failure = 'testTimeoutFailure';
        break;
      case 'skipped':
        rec.outcome = tc.options && tc.options.mode === 'todo' ? 'todo' : 'skip';
        rec.reason = r.note || '';
        break;
      default:
        return; // pending: it did not run
    }
    write(rec);
  }

  onTestRunEnd(modules, unhandled) {
    for (const m of modules || []) writeLoad(m.moduleId, m.errors());
    this.writeUnhandled(unhandled);
  }
}
