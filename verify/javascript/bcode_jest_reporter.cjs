// bcode's reporter for jest (a custom reporter's onTestResult): one JSON
// line per test result and per test file that failed to load, in the
// format of bcode's node --test reporter, appended to the file
// BCODE_TEST_LOG names. Written by bcode into a scratch directory for each
// run; the repository's own reporters are never used.
'use strict';

const { write } = require('./bcode-signed-log.cjs');

const outcomes = { passed: 'pass', failed: 'fail', pending: 'skip', skipped: 'skip', disabled: 'skip', todo: 'todo' };

// withoutStack drops a failure message's stack frames: the detail is the
// assertion, and the frames name bcode's cache paths, not the test's.
function withoutStack(msg) {
  return String(msg).split('\n').filter((l) => !/^\s+at /.test(l)).join('\n').trim();
}

class BcodeJestReporter {
  onTestResult(_test, tr) {
    if (tr.testExecError) {
      const e = tr.testExecError;
      write({ file: tr.testFilePath, path: [tr.testFilePath], outcome: 'fail', load: true, error: String(e.message || e), output: tr.failureMessage || '' });
    }
    for (const r of tr.testResults || []) {
      const outcome = outcomes[r.status];
      if (!outcome) continue; // focused: not a result
      const rec = { file: tr.testFilePath, path: [...r.ancestorTitles, r.title], outcome, ms: r.duration || 0 };
      if (outcome === 'fail') {
        rec.error = (r.failureMessages || []).map(withoutStack).join('\n');
        if (/Exceeded timeout of \d+ ms for a test/.test(rec.error)) rec.failure = 'testTimeoutFailure';
      }
      write(rec);
    }
  }

  getLastError() {
    return undefined; // the run's verdict is bcode's, from the log
  }
}

module.exports = BcodeJestReporter;
