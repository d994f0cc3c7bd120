// Timing facts of the recorded scenarios, measured the same way on the trace and on the replay:
// how long a build kept Ready Unknown with nothing written, and how long an AG stayed silent after
// its Ready=True write was lost.

import { readyInBody } from './sw-fidelity-normalise.js';
import type { ReplayedRequest } from './sw-trace-replay.js';

function ready(r: ReplayedRequest): string {
  return r.lost ? (r.lostReady ?? '?') : readyInBody(r.body);
}

function isEmptyBody(r: ReplayedRequest): boolean {
  return (
    !r.lost && r.body !== null && typeof r.body === 'object' && Object.keys(r.body).length === 0
  );
}

/**
 * The longest build: seconds from an in-progress write (Ready Unknown) to the next Ready=True
 * write of the same AG, when nothing but the `{}` status patch was sent in between. 0 when none.
 */
export function longestSilentBuildS(requests: readonly ReplayedRequest[]): number {
  let longest = 0;
  for (let i = 0; i < requests.length; i++) {
    const start = requests[i];
    if (!start || !ready(start).startsWith('Unknown/')) continue;
    let j = i + 1;
    while (requests[j] && isEmptyBody(requests[j] as ReplayedRequest)) j++;
    const end = requests[j];
    if (end && ready(end).startsWith('True/')) longest = Math.max(longest, end.tRel - start.tRel);
  }
  return longest;
}

export interface AfterLoss {
  /** Requests sent after the lost Ready=True write. */
  requestsAfter: number;
  /** Seconds from the last request to the end of the recording. */
  silenceS: number;
}

/** What followed the first lost (500) Ready=True write; undefined when none was lost. */
export function afterLostWrite(
  requests: readonly ReplayedRequest[],
  endTRel: number,
): AfterLoss | undefined {
  const i = requests.findIndex((r) => r.lost && ready(r).startsWith('True/'));
  if (i < 0) return undefined;
  const last = requests.at(-1);
  return { requestsAfter: requests.length - 1 - i, silenceS: endTRel - (last?.tRel ?? 0) };
}
