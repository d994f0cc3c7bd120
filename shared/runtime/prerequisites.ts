// When its Kubernetes client is first built (its first API call, soon after start-up: see
// shared/runtime/main.ts) each function asks discovery whether the APIs it needs are served
// (shared/core/access/prerequisites.ts) and says so once, in one line: `prerequisites served`, or
// `prerequisite API not served` with the missing ones, plus a Warning Event where the function may
// write Events. It runs beside the function, never in its way: nothing awaits it, and
// a read that fails (a degraded API server: timeout, 429, 5xx, or a 403) leaves the need
// `unknown`; the unknown ones are read again after each of `retryDelaysMs`, and when still unknown
// the last line says `prerequisites unknown` with them. Nothing here throws.

import {
  API_NEEDS,
  prerequisiteEvent,
  reportOf,
  type ApiNeed,
  type NeedState,
  type PrerequisiteReport,
} from '../core/access/prerequisites.js';
import { isKubeError } from '../kube/errors.js';
import type { KubePort } from '../kube/port.js';
import type { Clock } from './clock.js';
import type { FunctionConfig } from './env.js';
import type { Logger } from './logger.js';

/** The functions whose RBAC lets them create Events (knative/: events.k8s.io create). */
const WRITES_EVENTS = new Set(['force-drift', 'surface-stalled', 'heal-external-artifacts']);

/** Waits before reading the unknown needs again: 15 s, 1 min, 4 min after start. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [15_000, 45_000, 180_000];

export interface PrerequisiteDeps {
  readonly fn: string;
  readonly kube: Pick<KubePort, 'listServedResources' | 'createEvent'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: Pick<FunctionConfig, 'installNamespace' | 'events'>;
  readonly retryDelaysMs?: readonly number[];
}

const sleep = (clock: Clock, ms: number) =>
  new Promise<void>((done) => clock.deadline(ms, () => done()));

/** Checks, logs and reports; resolves with the last report. */
export async function checkPrerequisites(deps: PrerequisiteDeps): Promise<PrerequisiteReport> {
  const needs = API_NEEDS[deps.fn] ?? [];
  if (needs.length === 0) return reportOf([]); // dead-letter: no API at all
  const states = new Map<ApiNeed, NeedState>(needs.map((n) => [n, 'unknown']));
  const errors: Record<string, string> = {};
  const delays = deps.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  for (let round = 0; ; round++) {
    await readUnknown(deps.kube, states, errors);
    const report = reportOf([...states]);
    const last = report.unknown.length === 0 || round >= delays.length;
    if (report.missing.length > 0) {
      // Said once: a missing API stays missing until someone installs its CRD.
      deps.logger.error(
        { missing: report.missing, unknown: report.unknown, served: report.served },
        'prerequisite API not served',
      );
      await writeEvent(deps, report.missing);
      return report;
    }
    if (last) {
      if (report.unknown.length > 0) {
        deps.logger.warn({ unknown: report.unknown, errors }, 'prerequisites unknown');
      } else {
        deps.logger.info({ served: report.served }, 'prerequisites served');
      }
      return report;
    }
    await sleep(deps.clock, delays[round] ?? 0);
  }
}

/** One discovery read per group version still unknown; NotFound means not served. */
async function readUnknown(
  kube: PrerequisiteDeps['kube'],
  states: Map<ApiNeed, NeedState>,
  errors: Record<string, string>,
): Promise<void> {
  const groupVersions = new Map<string, ApiNeed[]>();
  for (const [need, state] of states) {
    if (state !== 'unknown') continue;
    const gv = `${need.group}/${need.version}`;
    groupVersions.set(gv, [...(groupVersions.get(gv) ?? []), need]);
  }
  await Promise.all(
    [...groupVersions].map(async ([gv, forGv]) => {
      const [first] = forGv;
      if (first === undefined) return;
      try {
        const served = new Set(await kube.listServedResources(first.group, first.version));
        for (const n of forGv) states.set(n, served.has(n.resource) ? 'served' : 'missing');
        delete errors[gv];
      } catch (e) {
        if (isKubeError(e, 'NotFound')) {
          for (const n of forGv) states.set(n, 'missing');
          delete errors[gv];
        } else {
          errors[gv] = isKubeError(e) ? e.kind : 'unexpected';
        }
      }
    }),
  );
}

/** The Warning Event, best effort (a failure is logged at warn, once: this runs once). */
async function writeEvent(deps: PrerequisiteDeps, missing: readonly string[]): Promise<void> {
  if (!WRITES_EVENTS.has(deps.fn)) return;
  const { installNamespace, events } = deps.config;
  const event = prerequisiteEvent(
    deps.fn,
    installNamespace,
    missing,
    events.reportingInstance,
    deps.clock.now(),
  );
  try {
    await deps.kube.createEvent(event, { timeoutMs: events.writeTimeoutMs });
  } catch (e) {
    // Conflict: this report exists already (another replica or an earlier start).
    if (isKubeError(e, 'Conflict')) return;
    deps.logger.warn(
      { error: isKubeError(e) ? e.kind : 'unexpected', event: event.metadata.name },
      'could not write the prerequisite Event',
    );
  }
}
