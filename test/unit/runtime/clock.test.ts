// Every timer of ours is correct for any delay (issue 12, item 0). Node's setTimeout takes at most
// 2^31-1 ms and fires a longer delay after 1 ms, with a TimeoutOverflowWarning; a clock that passes
// the raw delay fires far-future timers at once, again and again.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMEOUT_MS, systemTimerClock } from '../../../shared/runtime/clock.js';

const DAY = 86_400_000;
const YEAR = 365 * DAY;

describe('systemTimerClock: the real-clock path', () => {
  it('does not fire a timer a year ahead, and Node raises no TimeoutOverflowWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w.name);
    };
    process.on('warning', onWarning);
    const clock = systemTimerClock();
    let fired = 0;
    try {
      clock.setTimer(Date.now() + YEAR, () => {
        fired++;
      });
      // Long enough for a 1 ms overflow timer to have fired many times over.
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(fired).toBe(0);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    } finally {
      clock.stop();
      process.off('warning', onWarning);
    }
  });

  it('still fires a near timer on time', async () => {
    const clock = systemTimerClock();
    const started = Date.now();
    const firedAt = await new Promise<number>((resolve) => {
      clock.setTimer(started + 30, () => resolve(Date.now()));
    });
    expect(firedAt - started).toBeGreaterThanOrEqual(29);
    clock.stop();
  });
});

describe('systemTimerClock under a Node-faithful fake setTimeout', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each([
    { name: 'exactly the limit', delay: MAX_TIMEOUT_MS },
    { name: 'one past the limit', delay: MAX_TIMEOUT_MS + 1 },
    { name: '40 days (two chunks)', delay: 40 * DAY },
    { name: 'a year (the re-armed one-moment PingSource)', delay: YEAR },
    { name: 'five years', delay: 5 * YEAR },
  ])('$name: fires once, at its moment', async ({ delay }) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: Date.UTC(2026, 0, 1) });
    const clock = systemTimerClock();
    const due = Date.now() + delay;
    const firedAt: number[] = [];
    clock.setTimer(due, () => {
      firedAt.push(Date.now());
    });
    await vi.advanceTimersByTimeAsync(delay - 1);
    expect(firedAt).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(firedAt).toEqual([due]);
    await vi.advanceTimersByTimeAsync(YEAR);
    expect(firedAt).toEqual([due]);
    clock.stop();
  });

  it('cancel() stops a long timer between its chunks', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: Date.UTC(2026, 0, 1) });
    const clock = systemTimerClock();
    let fired = 0;
    const id = clock.setTimer(Date.now() + 60 * DAY, () => {
      fired++;
    });
    await vi.advanceTimersByTimeAsync(30 * DAY); // past the first chunk
    expect(clock.cancel(id)).toBe(true);
    await vi.advanceTimersByTimeAsync(60 * DAY);
    expect(fired).toBe(0);
    expect(clock.cancel(id)).toBe(false);
  });

  it('a timer whose moment has passed fires at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: Date.UTC(2026, 0, 1) });
    const clock = systemTimerClock();
    let fired = 0;
    clock.setTimer(Date.now() - 5000, () => {
      fired++;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(fired).toBe(1);
  });
});
