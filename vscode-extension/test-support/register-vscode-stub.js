// Loaded with `node --require`: makes require('vscode') resolve to the stub,
// since the real module only exists inside the VS Code extension host.
'use strict';
const Module = require('module');
const path = require('path');
const stub = path.join(__dirname, 'vscode-stub.js');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'vscode') return stub;
  return resolve.call(this, request, ...rest);
};
