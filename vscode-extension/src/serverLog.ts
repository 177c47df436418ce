// bcode-ls logs to stderr with log/slog's text handler
// (`time=… level=INFO msg=…`). vscode-languageclient writes every stderr
// line to the output channel as an error; this sorts them by their level.
// No vscode import, so node --test checks it directly.

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

/** levelOf is the level of one stderr line: slog's level=, else error for a panic or a Go runtime error, else info. */
export function levelOf(line: string): LogLevel {
  const m = /(?:^|\s)level=([A-Za-z]+)(?:[+-]\d+)?(?:\s|$)/.exec(line);
  if (m) {
    switch (m[1].toUpperCase()) {
      case 'DEBUG': return 'debug';
      case 'INFO': return 'info';
      case 'WARN': case 'WARNING': return 'warn';
      case 'ERROR': return 'error';
    }
  }
  if (/^(panic:|fatal error:|goroutine \d+ \[)/.test(line)) return 'error';
  // Flag errors and the like ("bcode-ls: --listen …") are printed without
  // a level and end the server: show them as errors.
  if (/^bcode-ls: /.test(line)) return 'error';
  return 'info';
}
