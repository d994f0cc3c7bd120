// The cold-start and memory benches' rounds: the same measurement of detect (from dist/, on the
// no-API environment of no-api-detect.ts) and of the echo baseline, with the realistic update
// event, alternating which of the two goes first from round to round.

import { realisticUpdate } from './events.js';
import { ECHO_ENV, startNoApiDetect } from './no-api-detect.js';
import type { BenchContext } from './types.js';

/** How one server is measured: its script and environment, and the event it is sent. */
export type Measure<T> = (
  script: string,
  env: Record<string, string>,
  headers: Record<string, string>,
  body: string,
) => Promise<T>;

export interface DetectVsEcho<T> {
  readonly detect: T[];
  readonly echo: T[];
  /** Requests detect sent to the stand-in Kubernetes API over all rounds. */
  readonly detectApiCalls: number;
}

/** `rounds` measurements of each; echo goes first in even rounds, detect in odd ones. */
export async function measureDetectVsEcho<T>(
  ctx: BenchContext,
  rounds: number,
  measure: Measure<T>,
): Promise<DetectVsEcho<T>> {
  const scripts = await ctx.scripts();
  const { body, headers } = realisticUpdate();
  const noApi = await startNoApiDetect();
  const detectEnv = { ...noApi.env, ...scripts.detectEnv };
  const detect: T[] = [];
  const echo: T[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const detectFirst = i % 2 === 1;
      if (detectFirst) detect.push(await measure(scripts.detect, detectEnv, headers, body));
      echo.push(await measure(scripts.echo, ECHO_ENV, headers, body));
      if (!detectFirst) detect.push(await measure(scripts.detect, detectEnv, headers, body));
    }
    return { detect, echo, detectApiCalls: noApi.api.total() };
  } finally {
    await noApi.close();
  }
}
