// What the Tasks view and the events document show of a task's last gate
// run (bcode/task's verification.report): the verdict with its reasons,
// the test table (each new or modified test, its outcome on the base and
// on the head, credited or why not) and the findings, for every verdict:
// a tampered one names what was tampered with. No vscode import, so
// node --test checks it directly.
import { CheckFinding, CheckReport, CheckTest, Oracle } from './protocol';

export interface CheckRow {
  kind: 'reason' | 'finding' | 'test' | 'none';
  label: string;
  description: string;
  tooltip: string;
  /** codicon and theme colour */
  icon: { id: string; color?: string };
}

/** findingText is one finding as a person reads it: where, then what. */
export function findingText(f: CheckFinding): string {
  return `${f.path}${f.line ? `:${f.line}` : ''}: ${f.message || f.code}`;
}

/** testOutcome is a test's base → head outcomes and what it earned. */
export function testOutcome(t: CheckTest): string {
  const sides = `base ${t.base_outcome || '—'} → head ${t.head_outcome || '—'}`;
  const earned = t.credited ? 'credited' : (t.reason_text || t.reason || 'not credited');
  return `${sides} · ${earned}${t.oracle ? ' · oracle' : ''}`;
}

/**
 * checkSummary is the check node's text: the verdict and, for tampered,
 * what was tampered with (the first finding, and how many more).
 */
export function checkSummary(verdict: string, r: CheckReport | undefined): { label: string; description: string } {
  const tamper = r?.tamper ?? [];
  const tests = r?.tests ?? [];
  const counts = [`${tests.length} test${tests.length === 1 ? '' : 's'}`];
  if (tamper.length) counts.unshift(`${tamper.length} finding${tamper.length === 1 ? '' : 's'}`);
  if (r?.level) counts.unshift(`level ${r.level} of ${r.level_required ?? '?'}`);
  if (verdict === 'tampered') {
    const what = tamper.length ? `tampered with ${findingText(tamper[0])}${tamper.length > 1 ? ` (+${tamper.length - 1} more)` : ''}` : 'tampered (the report names no finding)';
    return { label: `Check: ${what}`, description: counts.join(' · ') };
  }
  return { label: `Check: ${verdict}`, description: counts.join(' · ') };
}

/** checkRows are the check node's children: reasons, findings, then the test table. */
export function checkRows(r: CheckReport | undefined): CheckRow[] {
  if (!r) return [{ kind: 'none', label: 'the gate recorded no report for this run', description: '', tooltip: '', icon: { id: 'info' } }];
  const rows: CheckRow[] = [];
  for (const x of r.reasons ?? []) {
    rows.push({ kind: 'reason', label: x.message, description: x.code, tooltip: `${x.message} (${x.code})`, icon: { id: 'info' } });
  }
  if (r.level) rows.push(levelRow(r));
  for (const f of r.tamper ?? []) {
    rows.push({
      kind: 'finding', label: `Tampered: ${findingText(f)}`, description: f.code,
      tooltip: `${f.code}: ${f.path}${f.line ? `:${f.line}` : ''}\n${f.message}`,
      icon: { id: 'shield', color: 'list.errorForeground' },
    });
  }
  const tests = r.tests ?? [];
  for (const t of tests) {
    const where = t.file ? `${t.file}` : (t.package ?? '');
    rows.push({
      kind: 'test', label: t.name, description: testOutcome(t),
      tooltip: `${t.name}${where ? ` (${where})` : ''}\n${testOutcome(t)}`,
      icon: t.credited ? { id: 'pass', color: 'testing.iconPassed' } : { id: 'circle-slash', color: 'list.warningForeground' },
    });
  }
  if (tests.length === 0) rows.push({ kind: 'none', label: 'no new or modified test', description: '', tooltip: 'the change adds or modifies no test the gate could run', icon: { id: 'info' } });
  return rows;
}

/** oracleText is a task's reproduction as one row: the pinned tests, or the command still to reproduce. */
export function oracleText(o: Oracle): { text: string; tooltip: string } {
  const tests = o.tests ?? [];
  const files = (o.files ?? []).map((f) => `${f.path} (sha256 ${f.sha256.slice(0, 12)})`);
  const tooltip = [`reproduce: ${o.command}`, ...files].join('\n');
  if (tests.length === 0) return { text: `Oracle: not pinned yet (${o.command})`, tooltip };
  return { text: `Oracle: ${tests.map((t) => `${t.package}:${t.name}`).join(', ')}`, tooltip };
}

/** levelRow says which verification level the change reached, the one asked, and what is missing. */
function levelRow(r: CheckReport): CheckRow {
  const label = `Level ${r.level} reached, ${r.level_required ?? '?'} required`;
  const missing = r.level_missing ? `missing for ${r.level_missing}` : '';
  const oracle = r.oracle?.length ? `\noracle: ${r.oracle.join(', ')}` : '';
  const reached = r.level !== 'none' && (r.level ?? '') >= (r.level_required ?? '');
  return {
    kind: 'reason', label, description: missing, tooltip: `${label}${missing ? `; ${missing}` : ''}${oracle}`,
    icon: reached ? { id: 'pass', color: 'testing.iconPassed' } : { id: 'warning', color: 'list.warningForeground' },
  };
}

/** checkTable is the report as text: the events document's check section. */
export function checkTable(verdict: string, r: CheckReport | undefined): string[] {
  const lines = [`check: ${checkSummary(verdict, r).label.replace(/^Check: /, '')}`];
  if (!r) return [...lines, '  (no report recorded)'];
  for (const x of r.reasons ?? []) lines.push(`  reason ${x.code}: ${x.message}`);
  if (r.level) lines.push(`  level ${r.level} reached, ${r.level_required ?? '?'} required${r.level_missing ? `; missing for ${r.level_missing}` : ''}`);
  if (r.oracle?.length) lines.push(`  oracle: ${r.oracle.join(', ')}`);
  const tamper = r.tamper ?? [];
  if (tamper.length) {
    lines.push('  tampered with:');
    for (const f of tamper) lines.push(`    ${f.code}  ${findingText(f)}`);
  }
  const tests = r.tests ?? [];
  if (tests.length === 0) return [...lines, '  tests: none new or modified'];
  const rows = tests.map((t) => [t.name, t.base_outcome || '—', t.head_outcome || '—', t.credited ? 'credited' : (t.reason_text || t.reason || 'not credited')]);
  const head = ['test', 'base', 'head', 'credit'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) => '  ' + r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]))).join('  ');
  lines.push(fmt(head));
  for (const r of rows) lines.push(fmt(r));
  return lines;
}
