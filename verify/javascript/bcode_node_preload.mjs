// bcode's preload for node --test (loaded through NODE_OPTIONS into the
// runner and every test file's process): a test file's process sends its
// results to the runner over its stdout, a pipe, whose writes are
// asynchronous on Linux; --test-force-exit ends the process once its
// tests are done and dropped the results still buffered, the last tests
// of a file, more often on a loaded machine (nodejs/node#64833). Blocking
// writes cannot be dropped: the same remedy as Node's own fix
// (nodejs/node#64875), applied from outside.
for (const stream of [process.stdout, process.stderr]) {
  const handle = stream && stream._handle;
  if (handle && typeof handle.setBlocking === 'function') handle.setBlocking(true);
}
