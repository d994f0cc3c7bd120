// Renders rows as the plain-text table `npm run bench` prints, and as a Markdown table for
// docs/benchmarks.md.

import type { BenchRow } from './types.js';

const HEADERS = ['metric', 'value', 'baseline', 'ratio', 'target', 'pass'] as const;

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  if (abs >= 100) return Math.round(value).toLocaleString('en-US');
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function withUnit(value: number | null, unit: string): string {
  if (value === null) return '-';
  return unit === '' ? formatNumber(value) : `${formatNumber(value)} ${unit}`;
}

export function passText(pass: boolean | null): string {
  if (pass === null) return 'info';
  return pass ? 'yes' : 'NO';
}

export function rowCells(row: BenchRow): string[] {
  return [
    `${row.id} ${row.metric}`,
    row.note ?? withUnit(row.value, row.unit),
    withUnit(row.baseline, row.unit),
    row.ratio === null ? '-' : row.ratio.toFixed(2),
    row.target,
    passText(row.pass),
  ];
}

export function renderTable(rows: readonly BenchRow[]): string {
  const cells = [HEADERS.map(String), ...rows.map(rowCells)];
  const widths = HEADERS.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(cells[0] as string[]), rule, ...cells.slice(1).map(line)].join('\n');
}

export function renderMarkdown(rows: readonly BenchRow[]): string {
  const escape = (s: string): string => s.replace(/\|/g, '\\|');
  const head = `| ${HEADERS.join(' | ')} |`;
  const rule = `| ${HEADERS.map(() => '---').join(' | ')} |`;
  const body = rows.map((r) => `| ${rowCells(r).map(escape).join(' | ')} |`);
  return [head, rule, ...body].join('\n');
}
