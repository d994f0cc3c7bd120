// The deadline of a delivery and the sweep's budget (shared/runtime/delivery-deadlines.ts,
// docs/adr/0057-delivery-deadline-and-sweep-resume.md), over real HTTP against the real test API
// server through the recording, faulting proxy:
// - a delivery whose API call is held past its deadline (on the function's clock) answers 503 at
//   once, and nothing it would write afterwards is sent: force-drift, whose owner read fails open
//   into a claim (ADR 44), writes nothing; the AG keeps its resourceVersion;
// - a client that closes the connection (the Broker giving up) aborts the handler the same way;
// - surface-stalled's wait for another sync of the same AG ends with the deadline;
// - detect's sweep budget runs on the monotonic clock: a wall-clock step neither cuts nor stretches
//   it.
// The resume of an incomplete sweep (the same ADR) is detect's: detect.test.ts.

import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { HTTP, type CloudEvent } from 'cloudevents';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { ACTION_FORCE } from '../../../shared/core/index.js';
import {
  agRefOf,
  createOwnedPair,
  getArtifactGenerator,
  getPackageSource,
  writeArtifactGeneratorStatus,
} from '../../support/apiserver.js';
import { createAgWithStatus, healthyStatus, stuckStatus } from '../../support/ag-states.js';
import { SettableClock, testConfig } from '../../harness/functions.js';
import {
  actionEvent,
  agResourceEvent,
  postEvent,
  resyncPing,
  type Answer,
} from '../../support/http-events.js';
import type { CallMatch } from '../../support/kube-proxy.js';
import { deleteAlarm } from '../../support/recovery-alarm.js';
import { functionFile, GRACE_MS } from './suite-kit.js';

const { T0, kc, suite, ...file } = functionFile('delivery');
/** The function suites' default: DELIVERY_TIMEOUT_SECONDS 300, less the 10 s margin. */
const DEADLINE_MS = testConfig().deliveryDeadlineMs;
/** Longer than the adapter's per-request timeout in the suites (5 s): a cut call is not why. */
const PAST_REQUEST_TIMEOUT_MS = 6_000;

afterAll(() => deleteAlarm(kc));
beforeEach(() => {
  suite.sink.events.length = 0;
  suite.proxy.clearFaults();
  suite.proxy.clearCalls();
});

const WRITES: CallMatch['verb'] = ['create', 'update', 'patch', 'delete'];
const writesBy = (clientTag: string) => suite.proxy.count({ clientTag, verb: WRITES });
/** Holds the first call matching `match` without an answer until its client gives up. */
const holdFirst = (match: CallMatch) => suite.proxy.addFault({ kind: 'timeout', match, times: 1 });
const reached = (match: CallMatch, n = 1) =>
  expect.poll(() => suite.proxy.count(match), { timeout: 5_000 }).toBe(n);

/** Posts `event` over a raw request that the test can cut (the Broker's dispatcher giving up). */
function postCuttable(url: string, event: CloudEvent<unknown>): { cut(): void } {
  const message = HTTP.binary(event);
  const req = http.request(url, {
    method: 'POST',
    headers: message.headers as Record<string, string>,
  });
  req.on('error', () => undefined);
  req.end(String(message.body));
  return { cut: () => req.destroy() };
}

describe("force-drift: a delivery past its deadline (its owner read held; the read's failure would fail open into a claim)", () => {
  const ownerRead: CallMatch = {
    clientTag: 'force-drift',
    verb: 'get',
    resource: 'packagesources',
  };
  const now = T0 + GRACE_MS + 1_000;
  const stuckOwnedAg = async () => {
    const { artifactGenerator } = await createOwnedPair({}, kc);
    return writeArtifactGeneratorStatus(agRefOf(artifactGenerator), stuckStatus(T0), kc);
  };

  it('the deadline passes on its clock: 503 deadline at once, and no write, then or later', async () => {
    const clock = new SettableClock(now);
    const f = await suite.startForceDrift(clock);
    const ag = await stuckOwnedAg();
    holdFirst(ownerRead);
    const answer = postEvent(f.url, actionEvent(ACTION_FORCE, ag, 0, now));
    await reached(ownerRead);
    clock.advance(DEADLINE_MS - 1);
    await sleep(200);
    expect(suite.proxy.count({ clientTag: 'force-drift' })).toBe(2); // the AG and the owner
    const started = Date.now();
    clock.advance(1);
    expect(await answer).toMatchObject({ status: 503, body: { result: 'deadline' } });
    expect(Date.now() - started).toBeLessThan(2_000);
    await sleep(PAST_REQUEST_TIMEOUT_MS);
    expect(writesBy('force-drift')).toBe(0);
    expect(suite.proxy.callsMatching({ clientTag: 'force-drift' }).map((c) => c.verb)).toEqual([
      'get',
      'get',
    ]);
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    expect(clock.pendingDeadlines).toBe(0);
  });

  it('the client closes the connection: the handler stops, and nothing is written', async () => {
    const clock = new SettableClock(now);
    const f = await suite.startForceDrift(clock);
    const ag = await stuckOwnedAg();
    holdFirst(ownerRead);
    const delivery = postCuttable(f.url, actionEvent(ACTION_FORCE, ag, 0, now));
    await reached(ownerRead);
    delivery.cut();
    await sleep(PAST_REQUEST_TIMEOUT_MS);
    expect(writesBy('force-drift')).toBe(0);
    const after = await getArtifactGenerator(agRefOf(ag), kc);
    expect(after.metadata?.resourceVersion).toBe(ag.metadata?.resourceVersion);
    expect(clock.pendingDeadlines).toBe(0);
  });
});

describe("surface-stalled: the wait for another sync of the AG ends with the delivery's deadline", () => {
  it('both deliveries answer 503 at the deadline; the waiting one made no call; nothing is written', async () => {
    const clock = new SettableClock(T0 + 60_000);
    const s = await suite.startSurfaceStalled(clock);
    const { packageSource, artifactGenerator } = await createOwnedPair({}, kc);
    const ag = await writeArtifactGeneratorStatus(
      agRefOf(artifactGenerator),
      healthyStatus(T0),
      kc,
    );
    const name = packageSource.metadata?.name ?? '';
    const psBefore = await getPackageSource(name, kc);
    const agReads: CallMatch = {
      clientTag: 'surface-stalled',
      verb: 'get',
      resource: 'artifactgenerators',
    };
    holdFirst(agReads);
    const first = postEvent(s.url, agResourceEvent(ag));
    await reached(agReads);
    const callsOfFirst = suite.proxy.count({ clientTag: 'surface-stalled' });
    const second = postEvent(s.url, agResourceEvent(ag));
    await sleep(300);
    expect(suite.proxy.count({ clientTag: 'surface-stalled' })).toBe(callsOfFirst);
    const started = Date.now();
    clock.advance(DEADLINE_MS);
    const answers: Answer[] = await Promise.all([first, second]);
    expect(Date.now() - started).toBeLessThan(2_000);
    for (const a of answers) expect(a).toMatchObject({ status: 503, body: { result: 'deadline' } });
    await sleep(PAST_REQUEST_TIMEOUT_MS);
    expect(suite.proxy.count({ clientTag: 'surface-stalled' })).toBe(callsOfFirst);
    expect(writesBy('surface-stalled')).toBe(0);
    const psAfter = await getPackageSource(name, kc);
    expect(psAfter.metadata?.resourceVersion).toBe(psBefore.metadata?.resourceVersion);
  });
});

describe("detect: the sweep's budget runs on the monotonic clock", () => {
  const firstList: CallMatch = {
    clientTag: 'detect',
    verb: 'list',
    resource: 'artifactgenerators',
  };

  it('the wall clock steps an hour forward during the first page: the budget is not cut, the due force is sent', async () => {
    const { clock, d } = await file.detectOnEmptyCluster(T0 + GRACE_MS + 1_000);
    const stuck = await createAgWithStatus(kc, stuckStatus(T0));
    suite.proxy.addFault({ kind: 'slow', delayMs: 500, match: firstList, times: 1 });
    const answer = postEvent(d.url, resyncPing());
    await reached(firstList);
    clock.jumpWall(3_600_000);
    expect(await answer).toMatchObject({ status: 200, body: { result: 'swept' } });
    expect(file.forcesFor(stuck)).toHaveLength(1);
  });

  it('the wall clock steps an hour back during a slow page: the budget is not stretched (503, nothing sent)', async () => {
    const { clock, d } = await file.detectOnEmptyCluster(T0 + GRACE_MS + 1_000);
    // Real time on both readings, as in production; the wall one can be stepped.
    const wall0 = Date.now();
    let step = 0;
    clock.now = () => T0 + GRACE_MS + 1_000 + (Date.now() - wall0) + step;
    clock.monotonicMs = () => Date.now() - wall0;
    await d.close();
    const slow = await suite.startDetect(clock, { env: { SWEEP_BUDGET_MS: '300' } });
    // Stuck for two hours: due on the wall clock before and after the step.
    const stuck = await createAgWithStatus(kc, stuckStatus(T0 - 7_200_000));
    suite.proxy.addFault({ kind: 'slow', delayMs: 600, match: firstList });
    const answer = postEvent(slow.url, resyncPing());
    await reached(firstList);
    step = -3_600_000;
    expect(await answer).toMatchObject({ status: 503, body: { result: 'sweep-budget' } });
    expect(file.forcesFor(stuck)).toHaveLength(0);
  });
});
