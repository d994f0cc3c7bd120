// The recorded side of a fidelity comparison: a trace's requests and objects per AG, in the same
// terms as the replay (sw-trace-replay.ts), plus the timing facts both sides are held to.

import type { RequestFacts } from './sw-fidelity-normalise.js';
import type { ReplayedRequest } from './sw-trace-replay.js';
import {
  markAt,
  type Trace,
  type TraceAg,
  type TraceRequest,
  type TraceWatch,
} from './sw-traces.js';

/** A gap between two requests of one AG that counts as "nothing was sent for a while". */
export const LONG_GAP_S = 0.5;

export interface RecordedSide {
  requests: Map<string, ReplayedRequest[]>;
  objects: Map<string, TraceAg[]>;
  /** Seconds from `scenario-start` to `end`. */
  endTRel: number;
}

function factsOf(r: TraceRequest): RequestFacts {
  const lost = r.from.startsWith('faultproxy');
  return {
    verb: r.verb,
    subresource: r.subresource,
    code: r.code,
    lost,
    ...(lost
      ? {
          lostStatusKeys: [...(r.bodySummary?.statusKeys ?? [])].sort(),
          lostReady: r.bodySummary?.readyInBody ?? '?',
        }
      : { body: r.body }),
  };
}

export function recordedSide(trace: Trace): RecordedSide {
  const requests = new Map<string, ReplayedRequest[]>();
  const objects = new Map<string, TraceAg[]>();
  for (const r of trace.records) {
    if (r.rec === 'request') {
      requests.set(r.key, [...(requests.get(r.key) ?? []), { ...factsOf(r), tRel: r.tRel }]);
    } else if (r.rec === 'watch' || r.rec === 'initial') {
      const w: TraceWatch = r;
      objects.set(w.key, [...(objects.get(w.key) ?? []), w.object]);
    }
  }
  return { requests, objects, endTRel: markAt(trace, 'end') - markAt(trace, 'scenario-start') };
}

/** `#i→#j` for every pair of consecutive requests at least LONG_GAP_S apart. */
export function longGaps(requests: readonly ReplayedRequest[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < requests.length; i++) {
    const gap = (requests[i]?.tRel ?? 0) - (requests[i - 1]?.tRel ?? 0);
    if (gap >= LONG_GAP_S) out.push(`#${i}→#${i + 1}`);
  }
  return out;
}

/** Seconds between consecutive requests, and from the last one to the end of the recording. */
export function gapsOf(requests: readonly ReplayedRequest[], endTRel: number): number[] {
  const times = requests.map((r) => r.tRel);
  return [...times.slice(1).map((t, i) => t - (times[i] ?? 0)), endTRel - (times.at(-1) ?? 0)];
}
