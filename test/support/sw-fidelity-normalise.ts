// Normal forms of ArtifactGenerator requests and objects, the same for the recorded real
// source-watcher and for the simulator, so the two can be compared line by line. Timestamps, uids,
// resourceVersion values and digest values are dropped; "changed since the previous object" is kept.

import type { TraceAg } from './sw-traces.js';

/** What is known of one request, from either side. */
export interface RequestFacts {
  verb: string;
  /** 'status' or ''. */
  subresource: string;
  code: number | undefined;
  /** The merge-patch body, when it reached the API server. */
  body?: unknown;
  /** Refused before the API server (the fault proxy / the simulator's lost write). */
  lost: boolean;
  /** For a lost request: its status keys and Ready value (all the fault proxy logs). */
  lostStatusKeys?: string[];
  lostReady?: string;
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function conditionFacts(c: unknown, withGen: boolean): string {
  const { type, status, reason, observedGeneration } = obj(c);
  const gen = withGen ? `@gen${String(observedGeneration ?? '-')}` : '';
  return `${String(type)}=${String(status)}/${String(reason ?? '')}${gen}`;
}

/** The Ready value of a conditions body: `True/Succeeded`, or '-' when Ready is not in it. */
export function readyInBody(body: unknown): string {
  const conditions = obj(obj(body).status).conditions;
  const ready = Array.isArray(conditions)
    ? conditions.find((c) => obj(c).type === 'Ready')
    : undefined;
  if (!ready) return '-';
  return `${String(obj(ready).status)}/${String(obj(ready).reason ?? '')}`;
}

/** One line: verb, target, code and a summary of the body. */
export function requestLine(r: RequestFacts): string {
  const head = `${r.verb.toUpperCase()} ${r.subresource || 'main'} ${r.code ?? 'no-answer'}`;
  if (r.lost) {
    return `${head} refused before the API server: status{${(r.lostStatusKeys ?? []).join(' ')}} Ready=${r.lostReady ?? '?'}`;
  }
  const body = obj(r.body);
  const keys = Object.keys(body).sort();
  if (keys.length === 0) return `${head} {}`;
  const parts = keys.map((key) => {
    const part = obj(body[key]);
    if (key === 'metadata') {
      const items = Object.keys(part)
        .sort()
        .map((k) => {
          if (k === 'resourceVersion') return 'resourceVersion(precondition)';
          if (k === 'finalizers')
            return `finalizers[${((part[k] as string[] | null) ?? []).join(' ')}]`;
          return k;
        });
      return `metadata{${items.join(' ')}}`;
    }
    if (key === 'status') {
      const items = Object.keys(part)
        .sort()
        .map((k) => {
          if (k !== 'conditions') return k;
          const list = Array.isArray(part[k]) ? (part[k] as unknown[]) : [];
          return `conditions[${list.map((c) => conditionFacts(c, true)).join(' ')}]`;
        });
      return `status{${items.join(' ')}}`;
    }
    return `${key}{${Object.keys(part).sort().join(' ')}}`;
  });
  return `${head} ${parts.join(' ')}`;
}

function condition(ag: TraceAg, type: string): string {
  const c = ag.status?.conditions?.find((x) => x.type === type);
  return c ? conditionFacts(c, type === 'Ready') : `${type}=-`;
}

/** source-watcher's managedFields entries: `Update:main`, `Update:status`. */
function sourceWatcherFields(ag: TraceAg): string {
  const entries = (ag.metadata.managedFields ?? [])
    .filter((m) => m.manager === 'source-watcher')
    .map((m) => `${m.operation ?? '?'}:${m.subresource || 'main'}`)
    .sort();
  return `managedBy(source-watcher)[${entries.join(' ')}]`;
}

function presence(now: string | undefined, before: string | undefined, first: boolean): string {
  if (now === undefined) return 'absent';
  return first || now !== before ? 'new' : 'same';
}

/**
 * One line per object, in order, with consecutive equal lines collapsed: generation, finalizers,
 * source-watcher's managedFields entries (operation and subresource), Ready (status/reason/observedGeneration), Reconciling (status/reason), inventory and sources
 * digest (absent | new = present and changed since the previous object | same), the requestedAt
 * annotation and lastHandledReconcileAt (values: the replay sends the recorded requestedAt).
 */
export function stateLines(objects: readonly TraceAg[]): string[] {
  const out: string[] = [];
  let prev: TraceAg | undefined;
  for (const ag of objects) {
    const inv = ag.status?.inventory?.map((i) => i.digest).join(',');
    const prevInv = prev?.status?.inventory?.map((i) => i.digest).join(',');
    const line = [
      `gen${ag.metadata.generation ?? '-'}`,
      `finalizers[${(ag.metadata.finalizers ?? []).join(' ')}]`,
      sourceWatcherFields(ag),
      condition(ag, 'Ready'),
      condition(ag, 'Reconciling'),
      `inventory:${presence(inv, prevInv, !prev)}`,
      `digest:${presence(ag.status?.observedSourcesDigest, prev?.status?.observedSourcesDigest, !prev)}`,
      `requestedAt:${ag.metadata.annotations?.['reconcile.fluxcd.io/requestedAt'] ?? '-'}`,
      `lastHandledReconcileAt:${ag.status?.lastHandledReconcileAt ?? '-'}`,
    ].join(' ');
    if (out.at(-1) !== line) out.push(line);
    prev = ag;
  }
  return out;
}
