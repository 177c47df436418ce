// bcode's reporter for vitest 3 (the Reporter API's onTestCaseResult and
// onTestRunEnd): one JSON line per test result and per test file that
// failed to load, in the format of bcode's node --test reporter, appended
// to the file BCODE_TEST_LOG names. Written by bcode into a scratch
// directory for each run; the repository's own reporters are never used.
import { appendFileSync } from 'node:fs';

const log = process.env.BCODE_TEST_LOG;

function write(rec) {
  if (log) appendFileSync(log, JSON.stringify(rec) + '\n');
}

function errorText(errs) {
  return (errs || []).map((e) => `${e.name || 'Error'}: ${e.message}`).join('\n');
}

function timedOut(errs) {
  return (errs || []).some((e) => /^Test timed out in \d+ms/.test(String(e.message)));
}

export default class BcodeVitestReporter {
  onTestCaseResult(tc) {
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

  onTestRunEnd(modules) {
    for (const m of modules || []) {
      const errs = m.errors();
      if (errs.length > 0) {
        write({ file: m.moduleId, path: [m.moduleId], outcome: 'fail', load: true, error: errorText(errs) });
      }
    }
  }
}
