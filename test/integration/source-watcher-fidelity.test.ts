// The simulator meets the traces: each scenario recorded from the real source-watcher v2.1.0
// (test/recorded/source-watcher-v2.1.0/) is replayed on the simulator against the real test API
// server, and per AG the normalised requests (order and content, including the `{}` status patch
// and the finalizer patches), the normalised object states and the timing facts must match the
// recording. Deliberate differences: docs/adr/0013-simulator-fidelity.md.

import { describe, expect, it } from 'vitest';
import { afterLostWrite, longestSilentBuildS } from '../support/sw-fidelity-facts.js';
import { requestLine, stateLines } from '../support/sw-fidelity-normalise.js';
import {
  LONG_GAP_S,
  gapsOf,
  longGaps,
  recordedSide,
  type RecordedSide,
} from '../support/sw-trace-sides.js';
import { replayTraces, type ReplayWindow } from '../support/sw-trace-replay.js';
import { TRACES_DIR, loadTrace } from '../support/sw-traces.js';

interface Scenario {
  id: string;
  /** Replayed in order on one simulator; the last one is compared. */
  files: string[];
  shows: string;
  /** Recorded: a build kept Ready Unknown this many seconds with nothing written in between. */
  silentBuildS?: number;
  /** Recorded: after each lost Ready=True write, one more request (the rest of status), then this many seconds of silence. */
  silenceAfterLossS?: number;
}

const SCENARIOS: Scenario[] = [
  {
    id: 'S1',
    files: ['S1-create-healthy.jsonl'],
    shows: 'a new AG: in-progress, finalizer (main + status), Ready=True, then inventory + digest',
  },
  {
    id: 'S2',
    files: ['S2-lost-write-stuck.jsonl'],
    shows: 'a lost Ready=True write on create: stuck with inventory + digest, 40 s of silence',
    silenceAfterLossS: 40,
  },
  {
    id: 'S3',
    files: ['S2-lost-write-stuck.jsonl', 'S3-force-recovery.jsonl'],
    shows: 'the force on the stuck AG of S2: in-progress, {}, Ready=True, lastHandledReconcileAt',
  },
  {
    id: 'S4',
    files: ['S4-source-revision-rebuild.jsonl'],
    shows: 'a new source revision: rebuild with the {} status patch, Ready=True before the digest',
  },
  {
    id: 'S5',
    files: ['S5-slow-honest-build.jsonl'],
    shows: 'a 20 s build: Ready Unknown the whole time with no write in between',
    silentBuildS: 20,
  },
  {
    id: 'S6',
    files: ['S6-source-revision-fault-stuck.jsonl'],
    shows: 'a lost Ready=True write on a rebuild: stuck on the new digest, 20 s of silence',
    silenceAfterLossS: 20,
  },
  {
    id: 'S7',
    files: ['S7-spec-edit-fault-stuck.jsonl'],
    shows: 'a lost Ready=True write after a spec edit: stuck on generation 2, inventory only',
    silenceAfterLossS: 20,
  },
  {
    id: 'S8',
    files: ['S8-requestedat-healthy.jsonl'],
    shows: 'requestedAt on a healthy AG: one lastHandledReconcileAt patch, no build',
  },
  {
    id: 'S9',
    files: ['S9-requestedat-fault.jsonl'],
    shows: 'requestedAt with a loss armed: no conditions write, so the loss never fires',
  },
  {
    id: 'S10',
    files: ['S10-ten-ags-two-faulted.jsonl'],
    shows: 'ten AGs created at once, two lose their Ready=True write',
    silenceAfterLossS: 15,
  },
];

/** The recorded times come from two clocks (audit log, capture script): 0.1 s of slack. */
const CLOCK_SLACK_S = 0.1;

/** What is compared, per AG. */
interface AgView {
  requests: string[];
  objects: string[];
  /** Consecutive requests at least LONG_GAP_S apart, with the gap in whole seconds. */
  longGaps: string[];
}

function viewOf(side: RecordedSide | ReplayWindow, ags: readonly string[]): Record<string, AgView> {
  const out: Record<string, AgView> = {};
  for (const key of ags) {
    const requests = side.requests.get(key) ?? [];
    const gaps = gapsOf(requests, side.endTRel);
    out[key] = {
      requests: requests.map((r, i) => `#${i + 1} ${requestLine(r)}`),
      objects: stateLines(side.objects.get(key) ?? []),
      longGaps: longGaps(requests).map((pair) => {
        const i = Number(pair.slice(1, pair.indexOf('→'))) - 1;
        return `${pair} ≈${Math.round(gaps[i] ?? 0)} s`;
      }),
    };
  }
  return out;
}

/** Seconds from each AG's last request to the end of the recording. */
function quietAtEnd(side: RecordedSide | ReplayWindow, key: string): number {
  const requests = side.requests.get(key) ?? [];
  return gapsOf(requests, side.endTRel).at(-1) ?? 0;
}

describe('source-watcher simulator fidelity: the recorded real source-watcher v2.1.0', () => {
  it(`finds every trace in ${TRACES_DIR}`, () => {
    for (const file of new Set(SCENARIOS.flatMap((s) => s.files))) {
      const trace = loadTrace(file);
      expect(trace.meta.ags.length, file).toBeGreaterThan(0);
    }
  });

  it.each(SCENARIOS)('$id: $shows', async ({ files, silentBuildS, silenceAfterLossS }) => {
    const traces = files.map(loadTrace);
    const last = traces.at(-1);
    if (!last) throw new Error('a scenario needs a trace');
    const recorded = recordedSide(last);
    const replayed = await replayTraces(traces);

    // Order and content of requests and objects, per AG; one diff for all of it.
    expect(viewOf(replayed, last.meta.ags)).toEqual(viewOf(recorded, last.meta.ags));

    // The recorded timing facts, on both sides.
    for (const [side, name] of [
      [recorded, 'recorded'],
      [replayed, 'simulator'],
    ] as const) {
      for (const key of last.meta.ags) {
        const requests = side.requests.get(key) ?? [];
        const label = `${name} ${key}`;
        if (silentBuildS !== undefined && key === last.meta.ags[0]) {
          expect(longestSilentBuildS(requests), `${label}: silent build`).toBeGreaterThanOrEqual(
            silentBuildS - CLOCK_SLACK_S,
          );
        }
        const afterLoss = afterLostWrite(requests, side.endTRel);
        if (silenceAfterLossS !== undefined && afterLoss) {
          expect(afterLoss.requestsAfter, `${label}: requests after the lost write`).toBe(1);
          expect(
            afterLoss.silenceS,
            `${label}: silence after the lost write`,
          ).toBeGreaterThanOrEqual(silenceAfterLossS - CLOCK_SLACK_S);
        }
      }
    }

    for (const key of last.meta.ags) {
      // The recorded silence after each AG's last request held on the simulator too (nothing
      // more was sent until the end of the recording: the lists above are equal).
      const quiet = quietAtEnd(recorded, key);
      expect(quietAtEnd(replayed, key), `${key}: quiet period at the end`).toBeGreaterThanOrEqual(
        quiet - LONG_GAP_S,
      );
    }
  });
});
