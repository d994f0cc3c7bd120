// What happened to one AG between its first lost write and its first force, in order: the events
// the Broker took in about it, each delivery of those events with its answer, and every API
// request of the functions that names it, on the system's clock relative to the stall. P9 keeps
// the slowest first forces' timelines in its detail, so a tail can be read rather than guessed
// (issue 33).

import type { System } from './system.js';
import type { StormMemberResult } from './storm-fleet.js';
import { STORM_FUNCTION_TAGS } from '../support/storm.js';

const FUNCTION_TAGS: readonly string[] = STORM_FUNCTION_TAGS;

export interface FirstForceTimeline {
  readonly ag: string;
  readonly role: string;
  readonly stallToFirstForceS: number;
  /** `+S.s what`, in order of time. */
  readonly steps: readonly string[];
}

const seconds = (ms: number): string => `${ms >= 0 ? '+' : ''}${(ms / 1000).toFixed(1)}s`;

function namesAg(subject: string | undefined, namespace: string, name: string): boolean {
  if (subject === undefined) return false;
  return (
    subject === `${namespace}/${name}` ||
    subject.endsWith(`/namespaces/${namespace}/artifactgenerators/${name}`)
  );
}

function pathNamesAg(path: string, namespace: string, name: string): boolean {
  if (!path.includes(`/namespaces/${namespace}/`)) return false;
  return (
    path.includes(`/artifactgenerators/${name}`) ||
    path.includes(`metadata.name%3D${name}&`) ||
    path.endsWith(`metadata.name%3D${name}`) ||
    path.includes(`metadata.name=${name}&`) ||
    path.endsWith(`metadata.name=${name}`)
  );
}

const shortType = (type: string): string => type.split('.').slice(-2).join('.');

/** The timelines of the `count` slowest first forces (the AGs the p99 is made of). */
export function slowestFirstForces(
  system: System,
  results: readonly StormMemberResult[],
  count: number,
): FirstForceTimeline[] {
  const slow = results
    // The AGs the p99 is taken over: the ones the fleet plans to lose.
    .filter((r) => r.member.role !== 'honest')
    .filter((r) => r.stallToFirstForceMs !== null && r.firstStallAt !== null)
    .sort((a, b) => (b.stallToFirstForceMs ?? 0) - (a.stallToFirstForceMs ?? 0))
    .slice(0, count);
  return slow.map((r) => timelineOf(system, r));
}

function timelineOf(system: System, r: StormMemberResult): FirstForceTimeline {
  const { name } = r.member;
  const namespace = r.member.key.slice(0, r.member.key.indexOf('/'));
  const t0 = r.firstStallAt ?? 0;
  const end = t0 + (r.stallToFirstForceMs ?? 0);
  const steps: { at: number; text: string }[] = [];
  const inRange = (at: number): boolean => at >= t0 - 2_000 && at <= end + 1_000;
  for (const i of system.knative.broker.ingested) {
    if (!inRange(i.at) || !namesAg(i.event.subject, namespace, name)) continue;
    steps.push({ at: i.at, text: `ingest ${shortType(i.event.type)} (${i.origin})` });
  }
  for (const d of system.knative.broker.deliveries) {
    if (!inRange(d.at) || !namesAg(d.event.subject, namespace, name)) continue;
    steps.push({
      at: d.at,
      text: `deliver ${shortType(d.event.type)} to ${d.subscriber} #${d.attempt}: ${d.status ?? d.error ?? '-'} ${d.outcome}`,
    });
  }
  for (const c of system.proxy.calls) {
    if (!inRange(c.at) || !FUNCTION_TAGS.includes(c.clientTag)) continue;
    if (!pathNamesAg(c.path, namespace, name)) continue;
    const what = c.path.includes('fieldSelector') ? 'history' : c.path.split('?')[0];
    steps.push({
      at: c.at,
      text: `api ${c.clientTag} ${c.method} ${what?.split('/').slice(-2).join('/') ?? ''}: ${c.status ?? 'cut'}${c.storm === undefined ? '' : ` (${c.storm})`}`,
    });
  }
  for (const s of system.progress.of(r.member.key).stalls) {
    if (inRange(s)) steps.push({ at: s, text: 'stall (lost write)' });
  }
  steps.sort((a, b) => a.at - b.at);
  return {
    ag: name,
    role: r.member.role,
    stallToFirstForceS: (r.stallToFirstForceMs ?? 0) / 1000,
    steps: steps.map((s) => `${seconds(s.at - t0)} ${s.text}`),
  };
}
