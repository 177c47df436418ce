// bcode's signed test log, shared by its node --test, vitest and jest
// reporters: each record is one line, `<hex HMAC-SHA256> <JSON>`, appended
// synchronously to the file BCODE_TEST_LOG names (under --test-force-exit
// or --forceExit the process may end before a stream is flushed). Written
// by bcode into the run's scratch directory beside the reporters.
'use strict';
const { appendFileSync, readFileSync, unlinkSync } = require('node:fs');
const { createHmac } = require('node:crypto');

const log = process.env.BCODE_TEST_LOG;

// The key every line is signed with (verify/testlog): read from the file
// BCODE_LOG_KEY_FILE names and removed at once, when the runner loads its
// reporter (which requires this module) and before any test file runs, so
// the tests cannot sign a line.
function readKey() {
  const p = process.env.BCODE_LOG_KEY_FILE;
  delete process.env.BCODE_LOG_KEY_FILE;
  if (!p) return Buffer.alloc(0);
  let k;
  try {
    k = readFileSync(p);
  } catch {
    return Buffer.alloc(0);
  }
  try {
    unlinkSync(p);
  } catch {
    // still the key: bcode removes the scratch directory after the run
  }
  return k;
}
const key = readKey();

function signed(rec) {
  const body = JSON.stringify(rec);
  return createHmac('sha256', key).update(body).digest('hex') + ' ' + body + '\n';
}

// write appends rec to the log; false when there is no log to write to.
function write(rec) {
  if (!log) return false;
  appendFileSync(log, signed(rec));
  return true;
}

module.exports = { write };
