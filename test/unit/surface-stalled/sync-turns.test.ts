// One sync per AG at a time (ADR 50): the turns, and when a finished sync covers a waiting one.
// What it saves against the real API server: test/integration/functions/surface-stalled.test.ts.

import { describe, expect, it } from 'vitest';
import {
  createSyncTurns,
  MAX_SYNCS_WAITED,
  type SyncDecided,
} from '../../../functions/surface-stalled/sync-turns.js';

/** A sync that runs until `finish` (or `fail`) is called, recording when it started. */
function heldSync(log: string[], name: string) {
  let finish!: (d: SyncDecided<string>) => void;
  let fail!: (e: Error) => void;
  const run = () => {
    log.push(`${name} starts`);
    return new Promise<SyncDecided<string>>((resolve, reject) => {
      finish = (d) => {
        log.push(`${name} ends`);
        resolve(d);
      };
      fail = reject;
    });
  };
  return {
    run,
    finish: (agResourceVersion: string | undefined) => finish({ result: name, agResourceVersion }),
    fail: () => fail(new Error(`${name} failed`)),
  };
}

type HeldSync = ReturnType<typeof heldSync>;

/** Fresh turns, one log of starts and ends, and a held sync for each name. */
function turnsWith<const N extends readonly string[]>(...names: N) {
  const log: string[] = [];
  const syncs = names.map((n) => heldSync(log, n)) as { [K in keyof N]: HeldSync };
  return { turns: createSyncTurns(), log, syncs };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('sync turns', () => {
  it.each<[string, string | undefined, string | undefined, boolean]>([
    ['the running sync read a newer AG: covered', '12', '10', true],
    ['the running sync read the same version: covered', '10', '10', true],
    ['the running sync read an older AG: runs after it', '9', '10', false],
    [
      'the running sync read no AG (it decided on the event): runs after it',
      undefined,
      '10',
      false,
    ],
    [
      'the waiting event has no version (a reference or action event): runs after it',
      '12',
      undefined,
      false,
    ],
    ['versions that are not numbers: runs after it', 'abc', 'abd', false],
  ])('%s', async (_title, decidedOn, waiting, covered) => {
    const {
      turns,
      log,
      syncs: [first, second],
    } = turnsWith('first', 'second');
    const one = turns.run('ns/ag', '1', first.run);
    const two = turns.run('ns/ag', waiting, second.run);
    await settle();
    expect(log).toEqual(['first starts']);
    first.finish(decidedOn);
    expect(await one).toEqual({ result: 'first', agResourceVersion: decidedOn });
    await settle();
    if (covered) {
      expect(await two).toBe('covered');
      expect(log).toEqual(['first starts', 'first ends']);
    } else {
      expect(log).toEqual(['first starts', 'first ends', 'second starts']);
      second.finish('13');
      expect(await two).toEqual({ result: 'second', agResourceVersion: '13' });
    }
    expect(turns.running()).toBe(0);
  });

  it('a sync that fails covers nobody: the waiter runs, and the failure reaches its own caller', async () => {
    const {
      turns,
      log,
      syncs: [first, second],
    } = turnsWith('first', 'second');
    const one = turns.run('ns/ag', '10', first.run);
    const two = turns.run('ns/ag', '10', second.run);
    await settle();
    first.fail();
    await expect(one).rejects.toThrow('first failed');
    await settle();
    expect(log).toEqual(['first starts', 'second starts']);
    second.finish('10');
    expect(await two).toMatchObject({ result: 'second' });
    expect(turns.running()).toBe(0);
  });

  it('waiters take one turn each, in order; a later sync can cover the rest', async () => {
    const {
      turns,
      log,
      syncs: [a, b, c],
    } = turnsWith('a', 'b', 'c');
    const ra = turns.run('ns/ag', '5', a.run);
    const rb = turns.run('ns/ag', '20', b.run);
    const rc = turns.run('ns/ag', '15', c.run);
    await settle();
    a.finish('10'); // covers neither 20 nor 15
    await ra;
    await settle();
    expect(log).toEqual(['a starts', 'a ends', 'b starts']);
    b.finish('20'); // covers 15
    await rb;
    expect(await rc).toBe('covered');
    expect(log).toEqual(['a starts', 'a ends', 'b starts', 'b ends']);
  });

  it(`a delivery waits for at most ${MAX_SYNCS_WAITED} syncs, then syncs beside the running one`, async () => {
    const { turns, log, syncs } = turnsWith('s0', 'w1', 'w2', 'w3', 'w4');
    const runs = syncs.map((x, i) => turns.run('ns/ag', i === 0 ? '1' : '100', x.run));
    for (let i = 0; i < 3; i++) {
      await settle();
      syncs[i]?.finish(String(i + 1)); // never the waiters' 100
      await runs[i];
    }
    await settle();
    expect(log.filter((l) => l.endsWith('starts'))).toEqual([
      's0 starts',
      'w1 starts',
      'w2 starts',
      'w3 starts',
      'w4 starts',
    ]);
    // w3 (third in line) and w4 (which has now waited for three syncs) run together.
    expect(log.slice(-2)).toEqual(['w3 starts', 'w4 starts']);
    syncs[3].finish('100');
    syncs[4].finish('100');
    await Promise.all(runs);
    expect(turns.running()).toBe(0);
  });

  it('syncs about different AGs run side by side', async () => {
    const {
      turns,
      log,
      syncs: [x, y],
    } = turnsWith('x', 'y');
    const rx = turns.run('ns/x', '1', x.run);
    const ry = turns.run('ns/y', '1', y.run);
    await settle();
    expect(log).toEqual(['x starts', 'y starts']);
    expect(turns.running()).toBe(2);
    y.finish('1');
    x.finish('1');
    await Promise.all([rx, ry]);
    expect(turns.running()).toBe(0);
  });
});

describe("sync turns end with the delivery's deadline (ADR 57)", () => {
  it('a waiting delivery whose signal aborts rejects with its reason and never runs its sync', async () => {
    const {
      turns,
      log,
      syncs: [first, second],
    } = turnsWith('first', 'second');
    const one = turns.run('ns/ag', '1', first.run);
    const deadline = new AbortController();
    const two = turns.run('ns/ag', '2', second.run, deadline.signal);
    await settle();
    const reason = new Error('deadline passed');
    deadline.abort(reason);
    await expect(two).rejects.toBe(reason);
    // The running sync is not disturbed; when it ends, the aborted delivery does not start.
    first.finish('1');
    expect(await one).toEqual({ result: 'first', agResourceVersion: '1' });
    await settle();
    expect(log).toEqual(['first starts', 'first ends']);
    expect(turns.running()).toBe(0);
  });

  it('a signal already aborted: no sync runs, even with no other sync about the AG', async () => {
    const {
      turns,
      log,
      syncs: [only],
    } = turnsWith('only');
    const gone = AbortSignal.abort(new Error('client gone'));
    await expect(turns.run('ns/ag', '1', only.run, gone)).rejects.toThrow('client gone');
    expect(log).toEqual([]);
  });

  it('a signal that never aborts changes nothing', async () => {
    const {
      turns,
      syncs: [first, second],
    } = turnsWith('first', 'second');
    const live = new AbortController().signal;
    const one = turns.run('ns/ag', '1', first.run, live);
    const two = turns.run('ns/ag', '1', second.run, live);
    await settle();
    first.finish('1');
    await one;
    expect(await two).toBe('covered');
  });
});
