// The real clock behind bench P1's real-clock row: timers fire by themselves at their wall-clock
// moment, in time order, a cancelled one never fires, sleep honours its abort signal, and advance
// only waits.

import { describe, expect, it } from 'vitest';
import { WallClock } from '../../harness/wall-clock.js';

describe('WallClock', () => {
  it('reads the system clock', () => {
    const clock = new WallClock();
    const before = Date.now();
    const now = clock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });

  it('fires timers by themselves, in time order, not before their moment', async () => {
    const clock = new WallClock();
    const fired: { name: string; at: number; due: number }[] = [];
    const start = Date.now();
    const set = (name: string, delay: number): void => {
      const due = start + delay;
      clock.setTimer(due, () => {
        fired.push({ name, at: Date.now(), due });
      });
    };
    set('late', 60);
    set('early', 20);
    set('past', -1_000);
    expect(clock.pendingTimers).toBe(3);
    await new Promise((r) => setTimeout(r, 150));
    expect(fired.map((f) => f.name)).toEqual(['past', 'early', 'late']);
    for (const f of fired) expect(f.at).toBeGreaterThanOrEqual(f.due);
    expect(fired[2]!.at - start).toBeGreaterThanOrEqual(59);
    expect(clock.pendingTimers).toBe(0);
  });

  it('never fires a cancelled timer, nor any after stop()', async () => {
    const clock = new WallClock();
    let fired = 0;
    const id = clock.setTimer(Date.now() + 10, () => {
      fired++;
    });
    expect(clock.cancel(id)).toBe(true);
    expect(clock.cancel(id)).toBe(false);
    clock.setTimer(Date.now() + 10, () => {
      fired++;
    });
    clock.stop();
    await new Promise((r) => setTimeout(r, 50));
    expect(fired).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('sleeps for real and rejects when aborted', async () => {
    const clock = new WallClock();
    const t0 = Date.now();
    await clock.sleep(30);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(29);
    const abort = new AbortController();
    const slept = clock.sleep(10_000, { signal: abort.signal });
    abort.abort(new Error('stopped'));
    await expect(slept).rejects.toThrow('stopped');
    expect(clock.pendingTimers).toBe(0);
    await expect(clock.sleep(-1)).rejects.toThrow(RangeError);
  });

  it('advance and advanceTo wait real time', async () => {
    const clock = new WallClock();
    const t0 = Date.now();
    await clock.advance(25);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(24);
    const t1 = Date.now();
    await clock.advanceTo(t1 + 25);
    expect(Date.now()).toBeGreaterThanOrEqual(t1 + 24);
    await expect(clock.advance(Number.NaN)).rejects.toThrow(RangeError);
  });
});
