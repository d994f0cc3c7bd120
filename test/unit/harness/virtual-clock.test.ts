import { describe, expect, it } from 'vitest';
import { DEFAULT_START_MS, VirtualClock } from '../../harness/virtual-clock.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');

describe('VirtualClock start time', () => {
  it.each([
    { start: undefined, want: Date.parse('2026-01-01T00:00:00Z') },
    { start: T0, want: T0 },
    { start: '2026-03-01T12:00:00Z', want: T0 },
  ])('start $start -> $want', ({ start, want }) => {
    const clock = start === undefined ? new VirtualClock() : new VirtualClock({ start });
    expect(clock.now()).toBe(want);
  });

  it('default start is 2026-01-01T00:00:00Z', () => {
    expect(new Date(DEFAULT_START_MS).toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });

  it.each([{ start: 'not a date' }, { start: Number.NaN }, { start: Number.POSITIVE_INFINITY }])(
    'rejects start $start',
    ({ start }) => {
      expect(() => new VirtualClock({ start })).toThrow(RangeError);
    },
  );
});

describe('VirtualClock timers fire in time order', () => {
  // [name, timer offsets in insertion order, advance by, offsets fired in order]
  const cases: [string, number[], number, number[]][] = [
    ['out-of-order insertion fires by time', [300, 100, 200], 1000, [100, 200, 300]],
    ['same time fires in insertion order', [100, 100, 50], 100, [50, 100, 100]],
    ['timers after the target stay pending', [100, 500], 499, [100]],
    ['a timer exactly at the target fires', [500], 500, [500]],
    ['advance(0) fires nothing in the future', [1], 0, []],
  ];
  it.each(cases)('%s', async (_name, timers, advanceBy, fired) => {
    const clock = new VirtualClock({ start: T0 });
    const seen: Array<{ offset: number; order: number; nowAtFire: number }> = [];
    timers.forEach((offset, order) => {
      clock.setTimer(T0 + offset, () => {
        seen.push({ offset, order, nowAtFire: clock.now() - T0 });
      });
    });
    await clock.advance(advanceBy);
    expect(seen.map((s) => s.offset)).toEqual(fired);
    // Virtual time during a callback is the timer's own time.
    for (const s of seen) expect(s.nowAtFire).toBe(s.offset);
    expect(clock.now()).toBe(T0 + advanceBy);
    expect(clock.pendingTimers).toBe(timers.length - fired.length);
  });

  it('same-time timers keep insertion order (ids of equal times)', async () => {
    const clock = new VirtualClock({ start: T0 });
    const order: string[] = [];
    for (const name of ['a', 'b', 'c']) clock.setTimer(T0 + 10, () => void order.push(name));
    await clock.advance(10);
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('a timer set in the past fires at the next step without moving time backwards', async () => {
    const clock = new VirtualClock({ start: T0 });
    let firedAt: number | undefined;
    clock.setTimer(T0 - 5_000, () => {
      firedAt = clock.now();
    });
    await clock.advance(0);
    expect(firedAt).toBe(T0);
    expect(clock.now()).toBe(T0);
  });

  it('timers set by a callback inside the window fire in the same advance', async () => {
    const clock = new VirtualClock({ start: T0 });
    const fired: number[] = [];
    clock.setTimer(T0 + 100, () => {
      fired.push(clock.now() - T0);
      clock.setTimer(clock.now() + 50, () => void fired.push(clock.now() - T0));
      clock.setTimer(clock.now() + 5_000, () => void fired.push(clock.now() - T0));
    });
    await clock.advance(1_000);
    expect(fired).toEqual([100, 150]);
    expect(clock.peek()).toBe(T0 + 5_100);
  });
});

describe('VirtualClock async callbacks and settle', () => {
  it('awaits each async callback before firing the next timer', async () => {
    const clock = new VirtualClock({ start: T0 });
    const log: string[] = [];
    clock.setTimer(T0 + 10, async () => {
      log.push('a:start');
      await new Promise((r) => setTimeout(r, 20));
      log.push('a:end');
    });
    clock.setTimer(T0 + 10, () => void log.push('b'));
    await clock.advance(10);
    expect(log).toEqual(['a:start', 'a:end', 'b']);
  });

  it.each([
    { name: 'constructor hook', where: 'constructor' as const },
    { name: 'per-call hook', where: 'call' as const },
    { name: 'setSettle hook', where: 'setter' as const },
  ])('runs the $name before the first step and after every timer', async ({ where }) => {
    const log: string[] = [];
    const settle = async (): Promise<void> => {
      await new Promise((r) => setTimeout(r, 1));
      log.push(`settle@${clock.now() - T0}`);
    };
    const clock =
      where === 'constructor'
        ? new VirtualClock({ start: T0, settle })
        : new VirtualClock({ start: T0 });
    if (where === 'setter') clock.setSettle(settle);
    clock.setTimer(T0 + 10, () => void log.push('t10'));
    clock.setTimer(T0 + 20, () => void log.push('t20'));
    await (where === 'call' ? clock.advance(30, { settle }) : clock.advance(30));
    expect(log).toEqual(['settle@0', 't10', 'settle@10', 't20', 'settle@20']);
  });

  it('a timer set during settle at a due time fires in the same advance', async () => {
    const clock = new VirtualClock({ start: T0 });
    const fired: number[] = [];
    let armed = false;
    const settle = async (): Promise<void> => {
      if (!armed) {
        armed = true;
        clock.setTimer(clock.now() + 5, () => void fired.push(clock.now() - T0));
      }
    };
    await clock.advance(10, { settle });
    expect(fired).toEqual([5]);
  });

  it('a failing callback rejects advance, leaves time at its step and later timers pending', async () => {
    const clock = new VirtualClock({ start: T0 });
    let laterFired = false;
    clock.setTimer(T0 + 10, () => {
      throw new Error('boom');
    });
    clock.setTimer(T0 + 20, () => {
      laterFired = true;
    });
    await expect(clock.advance(100)).rejects.toThrow('boom');
    expect(clock.now()).toBe(T0 + 10);
    expect(laterFired).toBe(false);
    expect(clock.peek()).toBe(T0 + 20);
    expect(clock.advancing).toBe(false);
    await clock.advance(90);
    expect(laterFired).toBe(true);
  });
});

describe('VirtualClock sleep, cancel, peek', () => {
  it('sleep resolves only when virtual time passes now + ms', async () => {
    const clock = new VirtualClock({ start: T0 });
    let done = false;
    const p = clock.sleep(1_000).then(() => {
      done = true;
    });
    await clock.advance(999);
    expect(done).toBe(false);
    await clock.advance(1);
    await p;
    expect(done).toBe(true);
    expect(clock.now()).toBe(T0 + 1_000);
  });

  it('sleep(0) resolves without advancing', async () => {
    const clock = new VirtualClock({ start: T0 });
    await clock.sleep(0);
    expect(clock.now()).toBe(T0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('an aborted sleep rejects with the reason and removes its timer', async () => {
    const clock = new VirtualClock({ start: T0 });
    const ac = new AbortController();
    const p = clock.sleep(1_000, { signal: ac.signal });
    expect(clock.pendingTimers).toBe(1);
    ac.abort(new Error('stopped'));
    await expect(p).rejects.toThrow('stopped');
    expect(clock.pendingTimers).toBe(0);
  });

  it('cancel removes a timer once', async () => {
    const clock = new VirtualClock({ start: T0 });
    let fired = false;
    const id = clock.setTimer(T0 + 10, () => {
      fired = true;
    });
    expect(clock.cancel(id)).toBe(true);
    expect(clock.cancel(id)).toBe(false);
    await clock.advance(100);
    expect(fired).toBe(false);
  });

  it('peek reports the earliest pending timer, undefined when none', async () => {
    const clock = new VirtualClock({ start: T0 });
    expect(clock.peek()).toBeUndefined();
    clock.setTimer(T0 + 300, () => undefined);
    const early = clock.setTimer(T0 + 100, () => undefined);
    expect(clock.peek()).toBe(T0 + 100);
    clock.cancel(early);
    expect(clock.peek()).toBe(T0 + 300);
    await clock.advanceTo(T0 + 300);
    expect(clock.peek()).toBeUndefined();
  });
});

describe('VirtualClock bad input changes nothing', () => {
  it.each([
    { name: 'advance(-1)', act: (c: VirtualClock) => c.advance(-1) },
    { name: 'advance(NaN)', act: (c: VirtualClock) => c.advance(Number.NaN) },
    { name: 'advanceTo(before now)', act: (c: VirtualClock) => c.advanceTo(T0 - 1) },
    { name: 'sleep(-5)', act: (c: VirtualClock) => c.sleep(-5) },
  ])('$name rejects', async ({ act }) => {
    const clock = new VirtualClock({ start: T0 });
    clock.setTimer(T0 + 1, () => undefined);
    await expect(act(clock)).rejects.toThrow(RangeError);
    expect(clock.now()).toBe(T0);
    expect(clock.pendingTimers).toBe(1);
  });

  it('setTimer with a non-finite time throws', () => {
    const clock = new VirtualClock({ start: T0 });
    expect(() => clock.setTimer(Number.NaN, () => undefined)).toThrow(RangeError);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a second concurrent advance is refused', async () => {
    const clock = new VirtualClock({ start: T0 });
    let release!: () => void;
    clock.setTimer(T0 + 10, () => new Promise<void>((r) => (release = r)));
    const first = clock.advance(100);
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    await expect(clock.advance(5)).rejects.toThrow('already in progress');
    release();
    await first;
    expect(clock.now()).toBe(T0 + 100);
  });
});

describe('VirtualClock far-future timers (issue 12, item 0)', () => {
  it.each([
    { name: 'past the 2^31-1 ms setTimeout limit', delay: 2 ** 31 },
    { name: 'a year', delay: 365 * 86_400_000 },
  ])('$name: fires once, at its moment', async ({ delay }) => {
    const clock = new VirtualClock({ start: T0 });
    const fired: number[] = [];
    clock.setTimer(T0 + delay, () => {
      fired.push(clock.now());
    });
    await clock.advance(delay - 1);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual([T0 + delay]);
    await clock.advance(delay);
    expect(fired).toEqual([T0 + delay]);
  });
});

describe('VirtualClock monotonic time, wall jumps and deadlines (ADR 57)', () => {
  it('advance moves wall and monotonic time together; jumpWall moves the wall alone', async () => {
    const clock = new VirtualClock({ start: 1_000_000 });
    const mono0 = clock.monotonicMs();
    await clock.advance(500);
    expect(clock.now()).toBe(1_000_500);
    expect(clock.monotonicMs() - mono0).toBe(500);
    clock.jumpWall(3_600_000);
    expect(clock.now()).toBe(4_600_500);
    expect(clock.monotonicMs() - mono0).toBe(500);
    clock.jumpWall(-7_200_000);
    expect(clock.now()).toBe(1_000_500 - 3_600_000);
    expect(clock.monotonicMs() - mono0).toBe(500);
  });

  it('a wall jump neither fires a timer nor delays it: timers run on the monotonic timeline', async () => {
    const clock = new VirtualClock({ start: 0 });
    const fired: number[] = [];
    clock.setTimer(1_000, () => {
      fired.push(clock.monotonicMs());
    });
    clock.jumpWall(60_000);
    await clock.advance(999);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual([1_000]);
  });

  it('a deadline aborts its signal after ms of advance, whatever the wall does; clear() disarms it', async () => {
    const clock = new VirtualClock({ start: 0 });
    const d = clock.deadline(10_000);
    const cleared = clock.deadline(10_000);
    cleared.clear();
    clock.jumpWall(20_000);
    expect(d.signal.aborted).toBe(false);
    await clock.advance(9_999);
    expect(d.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(d.signal.aborted).toBe(true);
    expect((d.signal.reason as Error).name).toBe('DeadlineError');
    expect(cleared.signal.aborted).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });
});
