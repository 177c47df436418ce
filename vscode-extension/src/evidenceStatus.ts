// The status-bar text for the evidence state of the current change.
import { EvidenceReport } from './protocol';

export interface StatusText { text: string; tooltip: string; warning: boolean }

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** summarize turns bcode/evidence's report into the status-bar item's text. */
export function summarize(r: EvidenceReport | undefined): StatusText {
  const click = 'Click to run evidence now.';
  if (!r || r.state === 'none') {
    return { text: '$(beaker) bcode: no evidence yet', tooltip: `No evidence run yet: save a file of the change. ${click}`, warning: false };
  }
  if (r.state === 'running') {
    return { text: '$(sync~spin) bcode: evidence running…', tooltip: 'Mutants of the changed lines are being run against your tests.', warning: false };
  }
  if (r.state === 'failed') {
    return { text: '$(warning) bcode: evidence failed', tooltip: `${r.error ?? 'the run failed'}\n\n${click}`, warning: true };
  }
  const ms = r.mutants ?? [];
  const survived = ms.filter((m) => m.verdict === 'survived').length;
  const notCovered = ms.filter((m) => m.verdict === 'not_covered').length;
  const timedOut = ms.filter((m) => m.verdict === 'timeout').length;
  // bcode's one reported rule (docs/lsp.md): a mutant the run stopped
  // before is shown, never counted as killed.
  const noVerdict = ms.filter((m) => m.verdict === 'no_verdict').length;
  const range = r.base && r.head ? ` (${r.base.slice(0, 7)}..${r.head.slice(0, 7)})` : '';
  const extra: string[] = [];
  if (notCovered) extra.push(plural(notCovered, 'mutant not covered', 'mutants not covered'));
  if (timedOut) extra.push(plural(timedOut, 'mutant timed out', 'mutants timed out'));
  if (noVerdict) extra.push(plural(noVerdict, 'mutant without a verdict', 'mutants without a verdict'));
  const stale = r.state === 'cancelled' ? ' The last run was cancelled; this is the run before it.' : '';
  if (survived > 0) {
    return {
      text: `$(bug) ${plural(survived, 'mutant survives', 'mutants survive')}`,
      tooltip: `${plural(survived, 'mutant', 'mutants')} of ${ms.length} on the changed lines${range} survived: no test noticed the change. ${extra.join(', ')}${stale}\n\n${click}`,
      warning: true,
    };
  }
  if (ms.length === 0) {
    // Say why there is nothing: no change at all, no Go files, no
    // mutable code (the server's note), never "0 of 0".
    const why = (r.notes ?? []).at(-1);
    if (why && why.startsWith('no change')) {
      return { text: '$(circle-slash) bcode: no change', tooltip: `${why}.${stale} ${click}`, warning: false };
    }
    return { text: '$(pass) bcode: no mutants', tooltip: `${why ?? `No mutants on the changed lines${range}`}.${stale} ${click}`, warning: false };
  }
  if (extra.length > 0) {
    return { text: `$(info) ${extra.join(', ')}`, tooltip: `No mutant survived, but ${extra.join(' and ')}${range}.${stale} ${click}`, warning: false };
  }
  return { text: `$(pass) all ${ms.length} mutants killed`, tooltip: `Every mutant of the changed lines${range} was killed by a test.${stale} ${click}`, warning: false };
}
