// A delivery's failed call tried again in place (shared/kube/in-place-retry.ts, docs/adr/0070 and
// 0071), on
// the real kube-apiserver through the fault proxy, with the product's adapter inside a delivery as
// function-app.ts runs one, its waits on the wall clock: what reached the API server and what it
// stored, per case.

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildEvents, subjectOf } from '../../shared/core/index.js';
import { createKubeClient } from '../../shared/kube/client.js';
import type { KubePort } from '../../shared/kube/port.js';
import { systemClock } from '../../shared/runtime/clock.js';
import { DeliveryControl, inDelivery } from '../../shared/runtime/delivery.js';
import {
  agRefOf,
  createArtifactGenerator,
  getArtifactGenerator,
  makeArtifactGenerator,
  testKubeConfig,
} from '../support/apiserver.js';
import { failureOf } from '../support/kube-failure.js';
import { startKubeProxy, type CallMatch, type KubeProxy } from '../support/kube-proxy.js';

const TAG = 'in-place-retry';
let proxy: KubeProxy;
let kube: KubePort;

beforeAll(async () => {
  proxy = await startKubeProxy(testKubeConfig(), { tag: TAG });
  kube = createKubeClient({
    kubeConfig: proxy.kubeConfig(TAG),
    fieldManager: 'in-place-retry-test',
    requestTimeoutMs: 5_000,
    clock: systemClock,
  });
});
afterAll(async () => {
  await proxy.stop();
});
beforeEach(() => {
  proxy.clearFaults();
  proxy.clearCalls();
});

async function newAg() {
  const ag = await createArtifactGenerator(makeArtifactGenerator());
  proxy.clearCalls();
  return agRefOf(ag);
}

const reads = (name: string): CallMatch => ({ verb: 'get', resource: 'artifactgenerators', name });
const patches = (name: string): CallMatch => ({
  verb: 'patch',
  resource: 'artifactgenerators',
  name,
});
/** The answers the API server's clients got for `match`, in order ('cut' when none). */
const answers = (match: CallMatch): (number | 'cut')[] =>
  proxy.calls
    .filter(
      (c) =>
        c.verb === match.verb &&
        c.resource === match.resource &&
        (match.name === undefined || c.name === match.name),
    )
    .map((c) => c.status ?? 'cut');

/** The next patch of `name` answered 429 with Retry-After (as API Priority and Fairness does). */
const refusePatchOnce = (name: string, retryAfterSeconds: number) =>
  proxy.addFault({
    match: patches(name),
    kind: 'status',
    status: 429,
    retryAfterSeconds,
    times: 1,
  });

/** Runs `work` as one delivery's handler does. */
const delivered = <T>(work: () => Promise<T>, delivery = new DeliveryControl()): Promise<T> =>
  inDelivery(delivery, work);

describe('in-place retry on the real API server', () => {
  it('a read failing with 500 after the delivery had an answer is read again: the delivery gets the AG', async () => {
    const ref = await newAg();
    const got = await delivered(async () => {
      await kube.getArtifactGenerator(ref);
      proxy.addFault({ match: reads(ref.name), kind: 'status', status: 500, times: 1 });
      return kube.getArtifactGenerator(ref);
    });
    expect(got.metadata?.name).toBe(ref.name);
    expect(answers(reads(ref.name))).toEqual([200, 500, 200]);
  });

  it('a read cut mid-request after an answer is read again', async () => {
    const ref = await newAg();
    const got = await delivered(async () => {
      await kube.getArtifactGenerator(ref);
      proxy.addFault({ match: reads(ref.name), kind: 'reset', times: 1 });
      return kube.getArtifactGenerator(ref);
    });
    expect(got.metadata?.name).toBe(ref.name);
    expect(answers(reads(ref.name))).toEqual([200, 'cut', 200]);
  });

  it('a write refused with 429 and Retry-After: 1 is sent again after that second, and lands', async () => {
    const ref = await newAg();
    refusePatchOnce(ref.name, 1);
    const started = performance.now();
    await delivered(async () => {
      const ag = await kube.getArtifactGenerator(ref);
      return kube.patchArtifactGeneratorAnnotations(
        ref,
        { 'test/retried': 'yes' },
        { resourceVersion: ag.metadata?.resourceVersion ?? '' },
      );
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(answers(patches(ref.name))).toEqual([429, 200]);
    const stored = await getArtifactGenerator(ref);
    expect(stored.metadata?.annotations?.['test/retried']).toBe('yes');
  });

  it('a write with a resourceVersion precondition failing with 500 before it ran is sent again, and lands', async () => {
    const ref = await newAg();
    const stored = await delivered(async () => {
      const ag = await kube.getArtifactGenerator(ref);
      proxy.addFault({ match: patches(ref.name), kind: 'status', status: 500, times: 1 });
      return kube.patchArtifactGeneratorAnnotations(
        ref,
        { 'test/again': 'yes' },
        { resourceVersion: ag.metadata?.resourceVersion ?? '' },
      );
    });
    expect(answers(patches(ref.name))).toEqual([500, 200]);
    expect(stored.metadata?.annotations?.['test/again']).toBe('yes');
    expect((await getArtifactGenerator(ref)).metadata?.annotations?.['test/again']).toBe('yes');
  });

  it('a preconditioned write whose first send ran (500 after it applied): the second send is refused 409, the write stored once', async () => {
    const ref = await newAg();
    let readVersion = '';
    const err = await delivered(async () => {
      const ag = await kube.getArtifactGenerator(ref);
      readVersion = ag.metadata?.resourceVersion ?? '';
      proxy.addFault({
        match: patches(ref.name),
        kind: 'status',
        status: 500,
        phase: 'after',
        times: 1,
      });
      return failureOf(
        kube.patchArtifactGeneratorAnnotations(
          ref,
          { 'test/ran': 'once' },
          { resourceVersion: readVersion },
        ),
      );
    });
    // The caller reads Conflict as "read again and decide", and finds its own write there.
    expect(err.kind).toBe('Conflict');
    expect(answers(patches(ref.name))).toEqual([500, 409]);
    const stored = await getArtifactGenerator(ref);
    expect(stored.metadata?.annotations?.['test/ran']).toBe('once');
    // Exactly one write landed: one revision after the one read.
    const revisions = proxy.calls.filter(
      (c) =>
        c.verb === 'patch' && c.name === ref.name && c.written !== null && c.written !== undefined,
    );
    expect(revisions).toHaveLength(1);
    expect(stored.metadata?.resourceVersion).toBe(revisions[0]?.written?.resourceVersion);
  });

  it("the delivery's first call refused with 429 and Retry-After: 1 is sent again after that second", async () => {
    const ref = await newAg();
    proxy.addFault({
      match: reads(ref.name),
      kind: 'status',
      status: 429,
      retryAfterSeconds: 1,
      times: 1,
    });
    const started = performance.now();
    const got = await delivered(() => kube.getArtifactGenerator(ref));
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(got.metadata?.name).toBe(ref.name);
    expect(answers(reads(ref.name))).toEqual([429, 200]);
  });

  it('an Event create that failed is not sent again (its AlreadyExists would count a second occurrence): one create', async () => {
    const ref = await newAg();
    const err = await delivered(async () => {
      const ag = await kube.getArtifactGenerator(ref);
      const subject = subjectOf(ag);
      if (subject === null) throw new Error('the test AG has no Event subject');
      const [event] = buildEvents(
        { kind: 'forced', attempt: 1, maxAttempts: 5, claimAt: Date.now() },
        subject,
        'in-place-retry-test',
        Date.now(),
      );
      if (event === undefined) throw new Error('no Event built');
      proxy.addFault({
        match: { verb: 'create', resource: 'events' },
        kind: 'status',
        status: 500,
        times: 1,
      });
      return failureOf(kube.createEvent(event));
    });
    expect(err.kind).toBe('Transient');
    expect(answers({ verb: 'create', resource: 'events' })).toEqual([500]);
  });

  it.each<[string, { kind: 'status'; status: number } | { kind: 'timeout'; phase: 'after' }]>([
    ['500 (it may have run)', { kind: 'status', status: 500 }],
    ['429 without Retry-After', { kind: 'status', status: 429 }],
    ['a timeout after the write applied', { kind: 'timeout', phase: 'after' }],
  ])(
    'a write failing with %s is not sent again: Transient, one patch',
    async (_n, fault) => {
      const ref = await newAg();
      proxy.addFault({ match: patches(ref.name), ...fault, times: 1 });
      const err = await delivered(async () => {
        await kube.getArtifactGenerator(ref);
        return failureOf(kube.patchArtifactGeneratorAnnotations(ref, { 'test/once': 'x' }));
      });
      expect(err.kind).toBe('Transient');
      expect(answers(patches(ref.name))).toHaveLength(1);
    },
    20_000,
  );

  it("the delivery's first call failing without Retry-After is not sent again (its redelivery costs no more)", async () => {
    const ref = await newAg();
    proxy.addFault({ match: reads(ref.name), kind: 'status', status: 500, times: 1 });
    const err = await delivered(() => failureOf(kube.getArtifactGenerator(ref)));
    expect(err.kind).toBe('Transient');
    expect(answers(reads(ref.name))).toEqual([500]);
  });

  it('outside a delivery nothing is sent again', async () => {
    const ref = await newAg();
    await kube.getArtifactGenerator(ref);
    proxy.addFault({ match: reads(ref.name), kind: 'status', status: 500, times: 1 });
    expect((await failureOf(kube.getArtifactGenerator(ref))).kind).toBe('Transient');
    expect(answers(reads(ref.name))).toEqual([200, 500]);
  });

  it('a Retry-After above the bound is not sat out: Transient at once', async () => {
    const ref = await newAg();
    refusePatchOnce(ref.name, 30);
    const started = performance.now();
    const err = await delivered(async () => {
      await kube.getArtifactGenerator(ref);
      return failureOf(kube.patchArtifactGeneratorAnnotations(ref, { 'test/late': 'x' }));
    });
    expect(err.kind).toBe('Transient');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(answers(patches(ref.name))).toEqual([429]);
    expect((await getArtifactGenerator(ref)).metadata?.annotations?.['test/late']).toBeUndefined();
  });

  it('a delivery that ends during the wait sends nothing more, and the write is not stored', async () => {
    const ref = await newAg();
    refusePatchOnce(ref.name, 1);
    const delivery = new DeliveryControl();
    const pending = delivered(async () => {
      await kube.getArtifactGenerator(ref);
      return failureOf(kube.patchArtifactGeneratorAnnotations(ref, { 'test/cut': 'x' }));
    }, delivery);
    await expect.poll(() => answers(patches(ref.name))).toEqual([429]);
    delivery.abort(new Error('deadline'));
    const err = await pending;
    expect(err.kind).toBe('Transient');
    expect(err.message).toMatch(/delivery has ended|abandoned/);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(answers(patches(ref.name))).toEqual([429]);
    expect((await getArtifactGenerator(ref)).metadata?.annotations?.['test/cut']).toBeUndefined();
  });
});
