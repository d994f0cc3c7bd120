// The shapes every benchmark module shares: a module produces rows; the runner prints and saves
// them. A missed target is a row with pass=false, never an exception; an exception is an error.

import type { ServiceAccountTokens } from '../setup/cluster-rbac.js';
import type { ImportCost } from './import-cost.js';

/** One line of the results table. */
export interface BenchRow {
  /** The metric number, e.g. "P3". */
  readonly id: string;
  readonly metric: string;
  /** The measured value in `unit`, or null when it could not be measured. */
  readonly value: number | null;
  /** The baseline measured in the same run, or null when the metric has none. */
  readonly baseline: number | null;
  readonly unit: string;
  /** value / baseline, when both exist. */
  readonly ratio: number | null;
  /** The target, as text. */
  readonly target: string;
  /** true/false against the target; null when the row is informational (no target). */
  readonly pass: boolean | null;
  /** Shown instead of the number (e.g. "n/a (needs e2e harness)"). */
  readonly note?: string;
  /** Extra numbers for the JSON output and the docs (samples, counts, timings). */
  readonly detail?: Readonly<Record<string, unknown>>;
}

export interface BenchContext {
  /** Absolute path of the repository root. */
  readonly root: string;
  /** dist/ and the bundles built and fresh, the baselines compiled: the scripts to run with `node`. */
  scripts(): Promise<BenchScripts>;
  /** The shared test API server, started on first use; rejects when it cannot start. */
  apiServer(): Promise<BenchApiServer>;
  /** The runtime dependencies' import costs, measured on first use (P4 and P7 report them). */
  importCosts(): Promise<Record<string, ImportCost>>;
  /** Progress lines go to stderr so stdout stays the table. */
  log(message: string): void;
}

export interface BenchScripts {
  /** The bundled detect (dist/bundle/functions/detect/main.js): what the image runs. */
  readonly detect: string;
  /** Added to the bundled functions' environment: the compile cache, as the image has it. */
  readonly detectEnv: Readonly<Record<string, string>>;
  /** The bundled surface-stalled, likewise. */
  readonly surfaceStalled: string;
  /** The echo baseline (the SDK's HTTP.toEvent), compiled to .mjs: P4 and P7's baseline. */
  readonly echo: string;
  /** P3's baseline: express + detect's own CloudEvent parser (dist/), compiled to .mjs. */
  readonly parseEcho: string;
}

export interface BenchApiServer {
  /** Kubeconfig of a system:masters client for the server. */
  readonly kubeconfigPath: string;
  /** A token per ServiceAccount of knative/ (the functions run as these under RBAC). */
  readonly serviceAccountTokens: ServiceAccountTokens;
}

export interface BenchModule {
  /** Matches --only (e.g. "P3"). */
  readonly id: string;
  readonly title: string;
  run(ctx: BenchContext): Promise<BenchRow[]>;
}

/** A row for a measurement that has a baseline and a ratio target (`ratio <= max`). */
export function ratioRow(opts: {
  id: string;
  metric: string;
  value: number;
  baseline: number;
  unit: string;
  target: string;
  maxRatio?: number;
  minRatio?: number;
  detail?: Record<string, unknown>;
}): BenchRow {
  const { maxRatio, minRatio, ...row } = opts;
  const ratio = opts.baseline > 0 ? opts.value / opts.baseline : null;
  let pass: boolean | null = null;
  if (ratio !== null && (maxRatio !== undefined || minRatio !== undefined)) {
    pass =
      (maxRatio === undefined || ratio <= maxRatio) &&
      (minRatio === undefined || ratio >= minRatio);
  }
  return { ...valueRow({ ...row, pass }), ratio };
}

interface ValueRowOptions {
  id: string;
  metric: string;
  value: number;
  unit: string;
  target: string;
  pass: boolean | null;
  baseline?: number;
  detail?: Record<string, unknown>;
}

/** A row for a count or a value with an absolute target and no baseline. */
export function valueRow(opts: ValueRowOptions): BenchRow {
  return {
    id: opts.id,
    metric: opts.metric,
    value: opts.value,
    baseline: opts.baseline ?? null,
    unit: opts.unit,
    ratio: null,
    target: opts.target,
    pass: opts.pass,
    ...(opts.detail !== undefined ? { detail: opts.detail } : {}),
  };
}

/** The target and pass of an informational row (no target to meet). */
export const REPORT_ONLY = { target: 'report', pass: null } as const;

/** valueRow for the rows of one metric, which all carry its id. */
export function rowsOf(id: string): (opts: Omit<ValueRowOptions, 'id'>) => BenchRow {
  return (opts) => valueRow({ id, ...opts });
}

/** valueRow for the rows of one measurement, which all carry its id and detail. */
export function valueRowsOf(
  id: string,
  detail: Record<string, unknown>,
): (opts: Omit<ValueRowOptions, 'id' | 'detail'>) => BenchRow {
  return (opts) => valueRow({ id, ...opts, detail });
}

/** A row that could not be measured in this run (pass=false: the target is not shown met). */
export function unmeasuredRow(id: string, metric: string, target: string, note: string): BenchRow {
  return {
    id,
    metric,
    value: null,
    baseline: null,
    unit: '',
    ratio: null,
    target,
    pass: false,
    note,
  };
}

/**
 * The rows of each variant, run one after another: a variant that fails leaves an unmeasured row
 * (`what` names its run) and the other variants' rows.
 */
export async function rowsPerVariant<V>(
  id: string,
  variants: readonly V[],
  what: (variant: V) => string,
  run: (variant: V) => Promise<BenchRow[]>,
): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const v of variants) {
    try {
      rows.push(...(await run(v)));
    } catch (e) {
      rows.push(unmeasuredRow(id, what(v), 'runs', `error: ${String(e)}`));
    }
  }
  return rows;
}
