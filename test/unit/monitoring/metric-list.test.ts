// docs/operations.md's metric list ("Monitoring", "Metrics") is the list of instruments the
// functions export (docs/adr/0059): every instrument the OpenTelemetry port creates is in the
// table and every row of the table is an instrument, with the same OpenTelemetry name, the name
// Prometheus's OTLP translation gives it, the same labels and, where the table names them, the
// same closed set of values. The port records every method with every value its types allow and
// exports over OTLP/HTTP JSON to a real HTTP receiver on 127.0.0.1; the test reads what arrived.

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeErrorKind } from '../../../shared/kube/errors.js';
import type { HistoryGap } from '../../../shared/recovery/ag-history.js';
import { createLogger } from '../../../shared/runtime/logger.js';
import type {
  DeliveryOutcome,
  Metrics,
  OwedEventOutcome,
  RefusalReason,
  StallHow,
} from '../../../shared/runtime/metrics.js';
import { METRIC_PREFIX, createOtelMetrics } from '../../../shared/runtime/metrics-otel.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../support/otlp-receiver.js';

const ROOT = resolve(import.meta.dirname, '../../..');

/** Every value of each label's type: a value added to a type and not here fails to compile. */
const HOWS: Record<StallHow, true> = { 'lost-write': true, 'time-rule': true };
const REASONS: Record<RefusalReason, true> = {
  'forged-owner': true,
  unauthenticated: true,
  'policy-denied': true,
};
const OUTCOMES: Record<DeliveryOutcome, true> = {
  ok: true,
  retry: true,
  rejected: true,
  'dead-letter': true,
};
const OWED: Record<OwedEventOutcome, true> = { owed: true, written: true, dropped: true };
const GAPS: Record<HistoryGap, true> = {
  compacted: true,
  'not-comparable': true,
  'not-found': true,
  refused: true,
  forbidden: true,
  transient: true,
  skipped: true,
};
const KINDS: Record<KubeErrorKind, true> = {
  NotFound: true,
  Conflict: true,
  Invalid: true,
  Forbidden: true,
  Transient: true,
};
const keys = <K extends string>(r: Record<K, true>): K[] => Object.keys(r) as K[];

const AG = { namespace: 'cozy-system', name: 'a' };
/** Each recording method with every value it can be given (and values it must bound). */
const RECORD: Record<Exclude<keyof Metrics, 'flush' | 'shutdown'>, (m: Metrics) => void> = {
  stallFound: (m) => keys(HOWS).forEach((h) => m.stallFound(AG, h)),
  forced: (m) => [1, 2, 3, 4, 5, 6, 7, 100].forEach((a) => m.forced(AG, a)),
  recovered: (m) => m.recovered(AG, 45),
  verdict: (m) => m.verdict(AG, 720),
  externalArtifactHealed: (m) => m.externalArtifactHealed(AG),
  refused: (m) => keys(REASONS).forEach((r) => m.refused(r)),
  lostWriteToForce: (m) => m.lostWriteToForce(1.5),
  earlyDetectionDegraded: (m) =>
    [...keys(GAPS), 'a cause no one listed'].forEach((c) => m.earlyDetectionDegraded(c)),
  apiError: (m) => [...keys(KINDS), 'Weird'].forEach((k) => m.apiError(k)),
  delivery: (m) => keys(OUTCOMES).forEach((o) => m.delivery(o)),
  owedEvent: (m) => keys(OWED).forEach((o) => m.owedEvent(o)),
};

interface Attribute {
  key: string;
  value: { stringValue?: string };
}
interface OtlpMetric {
  name: string;
  unit?: string;
  sum?: { isMonotonic?: boolean; dataPoints: { attributes?: Attribute[] }[] };
  histogram?: { dataPoints: { attributes?: Attribute[] }[] };
}
interface OtlpBody {
  resourceMetrics: { scopeMetrics: { metrics: OtlpMetric[] }[] }[];
}

/** One instrument as exported: its names and its labels with the values seen. */
interface Instrument {
  otel: string;
  prometheus: string;
  labels: Record<string, string[]>;
}

/** Prometheus's OTLP translation (underscores, unit suffix, _total for monotonic counters). */
function prometheusName(m: OtlpMetric): string {
  const base = m.name.replaceAll('.', '_');
  const unit = m.unit === 's' ? '_seconds' : '';
  return `${base}${unit}${m.sum?.isMonotonic === true ? '_total' : ''}`;
}

function exported(bodies: OtlpBody[]): Instrument[] {
  const metrics = bodies
    .flatMap((b) => b.resourceMetrics)
    .flatMap((r) => r.scopeMetrics)
    .flatMap((s) => s.metrics);
  const byName = new Map<string, Instrument>();
  for (const m of metrics) {
    const inst = byName.get(m.name) ?? { otel: m.name, prometheus: prometheusName(m), labels: {} };
    for (const p of m.sum?.dataPoints ?? m.histogram?.dataPoints ?? []) {
      for (const a of p.attributes ?? []) {
        const seen = (inst.labels[a.key] ??= []);
        const v = a.value.stringValue ?? '';
        if (!seen.includes(v)) seen.push(v);
      }
    }
    byName.set(m.name, inst);
  }
  return [...byName.values()];
}

/** A documented row: names, and each label with its values ([] when the table lists none). */
interface Row {
  otel: string;
  prometheus: string;
  labels: Record<string, string[]>;
}

/** The table under "### Metrics" in docs/operations.md. */
export function documentedMetrics(markdown: string): Row[] {
  const section = markdown.split(/^### Metrics$/m)[1]?.split(/^#{2,3} /m)[0] ?? '';
  const rows = section.split('\n').filter((l) => l.startsWith(`| \`${METRIC_PREFIX}_`));
  return rows.map((line) => {
    const [what = '', labels = ''] = line.replace(/^\|\s+/, '').split(/\s+\|\s+/);
    const m = /^`([^`]+)` \(`([^`]+)`/.exec(what);
    if (m === null) throw new Error(`docs/operations.md: a metric row without names: ${line}`);
    const otel = m[2]!.startsWith('.') ? `${METRIC_PREFIX}${m[2]}` : m[2]!;
    const parsed: Record<string, string[]> = {};
    if (labels.trim() !== '—') {
      for (const part of labels.split(/,\s*/)) {
        const l = /^`([^`]+)`(?:\s*=\s*(.*))?$/.exec(part.trim());
        if (l === null) throw new Error(`docs/operations.md: a label cell part "${part}": ${line}`);
        parsed[l[1]!] = [...(l[2] ?? '').matchAll(/`([^`]+)`/g)].map((v) => v[1]!);
      }
    }
    return { otel, prometheus: m[1]!, labels: parsed };
  });
}

let receiver: OtlpReceiver<OtlpBody>;
let instruments: Instrument[] = [];

beforeAll(async () => {
  receiver = await startOtlpReceiver<OtlpBody>();
  const metrics = createOtelMetrics(
    'detect',
    {
      url: receiver.url,
      headers: {},
      timeoutMs: 5000,
      intervalMs: 600_000,
      serviceName: undefined,
      resourceAttributes: {},
    },
    createLogger({ name: 'metric-list-test', level: 'silent' }),
  );
  for (const record of Object.values(RECORD)) record(metrics);
  await metrics.shutdown();
  instruments = exported(receiver.bodies);
});

afterAll(() => receiver.close());

const docs = documentedMetrics(readFileSync(join(ROOT, 'docs/operations.md'), 'utf8'));
const byOtel = <T extends { otel: string }>(xs: T[]): Map<string, T> =>
  new Map(xs.map((x) => [x.otel, x]));

describe('monitoring: the metric list in docs/operations.md', () => {
  it('every instrument created in metrics-otel.ts is exported by the test (each method recorded)', () => {
    const source = readFileSync(join(ROOT, 'shared/runtime/metrics-otel.ts'), 'utf8');
    const created = source.match(
      /\bmeter\s*\.create(?:Observable)?(?:Counter|Histogram|UpDownCounter|Gauge)\(/g,
    );
    expect(instruments.length).toBeGreaterThan(0);
    expect(instruments.length).toBe(created?.length);
  });

  it('the table lists exactly the exported instruments, by both names', () => {
    expect(docs.map((d) => d.otel).sort()).toEqual(instruments.map((i) => i.otel).sort());
    const code = byOtel(instruments);
    for (const d of docs) expect(code.get(d.otel)?.prometheus, d.otel).toBe(d.prometheus);
  });

  it('each row lists exactly the labels exported, and the closed values exactly', () => {
    const code = byOtel(instruments);
    for (const d of docs) {
      const labels = code.get(d.otel)?.labels ?? {};
      expect(Object.keys(d.labels).sort(), `${d.otel}: labels`).toEqual(Object.keys(labels).sort());
      for (const [label, values] of Object.entries(d.labels)) {
        if (values.length === 0) continue; // an open label (namespace, name, function)
        expect([...(labels[label] ?? [])].sort(), `${d.otel}: ${label}`).toEqual(
          [...values].sort(),
        );
      }
    }
  });

  it('the table parser reads a row as the table writes it', () => {
    const row = documentedMetrics(
      '### Metrics\n\n| metric | labels | what |\n| --- | --- | --- |\n' +
        '| `source_watcher_recovery_x_total` (`.x`) | `function`, `why` = `a` \\| `b-c` | x |\n',
    );
    expect(row).toEqual([
      {
        otel: 'source_watcher_recovery.x',
        prometheus: 'source_watcher_recovery_x_total',
        labels: { function: [], why: ['a', 'b-c'] },
      },
    ]);
  });
});
