// P3's paired rounds set aside the rounds the host's CPU steal swayed (test/bench/p3-load.ts,
// test/bench/host-steal.ts). The steal readings here are given, as /proc/stat's text would be.
import { describe, expect, it } from 'vitest';
import { parseCpuTicks, stealBetween, type CpuTicks } from '../../bench/host-steal.js';
import { markNoisy, pairedRounds, rounds } from '../../bench/p3-load.js';

describe('parseCpuTicks', () => {
  it.each([
    [
      'a Linux 5.x cpu line (guest columns left out of the total)',
      'cpu  100 5 50 800 10 1 4 30 7 0\ncpu0 50 2 25 400 5 0 2 15 0 0\n',
      { steal: 30, total: 1000 },
    ],
    ['exactly eight columns', 'cpu  1 0 1 6 0 0 0 2\n', { steal: 2, total: 10 }],
    ['no aggregate line', 'cpu0 1 0 1 6 0 0 0 2\nintr 5\n', null],
    ['no steal column', 'cpu  1 0 1 6 0 0 0\n', null],
    ['a field that is not a number', 'cpu  1 0 x 6 0 0 0 2\n', null],
    ['empty text', '', null],
  ])('%s', (_what, text, expected) => {
    expect(parseCpuTicks(text)).toEqual(expected);
  });
});

describe('stealBetween', () => {
  it.each([
    ['a fifth stolen', { steal: 0, total: 0 }, { steal: 20, total: 100 }, 0.2],
    ['none stolen', { steal: 5, total: 100 }, { steal: 5, total: 300 }, 0],
    ['no time passed', { steal: 5, total: 100 }, { steal: 5, total: 100 }, 0],
    ['a reading missing', null, { steal: 5, total: 100 }, null],
  ] as const)('%s', (_what, a, b, expected) => {
    expect(stealBetween(a, b)).toBe(expected);
  });
});

/** A host whose steal over round i is stealByRound[i] (a share, or null: cannot tell). */
function hostWith(stealByRound: readonly (number | null)[]) {
  let ticks = 0;
  let steal = 0;
  let round = 0;
  let before = true;
  return {
    now(): CpuTicks | null {
      const share = stealByRound[round] ?? 0;
      if (before) {
        before = false;
        return share === null ? null : { steal, total: ticks };
      }
      before = true;
      round += 1;
      ticks += 1000;
      steal += Math.round((share ?? 0) * 1000);
      return { steal, total: ticks };
    },
    between: stealBetween,
  };
}

describe('pairedRounds', () => {
  const n = rounds();
  const quiet = Array.from({ length: n }, () => 0.01);
  it.each([
    ['a quiet host: rounds() rounds, all kept', quiet, n, n, 0, true],
    [
      'steal in the first two rounds: two more rounds run, those two set aside',
      [0.2, 0.3, ...quiet],
      n + 2,
      n,
      2,
      true,
    ],
    [
      'steal exactly at the bound counts as quiet',
      Array.from({ length: n }, () => 0.05),
      n,
      n,
      0,
      true,
    ],
    [
      'a host that cannot tell counts as quiet',
      Array.from({ length: n }, () => null),
      n,
      n,
      0,
      true,
    ],
    [
      'steal throughout: twice rounds() run, none kept, not enough',
      Array.from({ length: 2 * n }, () => 0.25),
      2 * n,
      0,
      2 * n,
      false,
    ],
    [
      'steal in all but a third of the rounds: below half kept, not enough',
      Array.from({ length: 2 * n }, (_, i) => (i < Math.ceil(n / 2) - 1 ? 0 : 0.25)),
      2 * n,
      Math.ceil(n / 2) - 1,
      2 * n - (Math.ceil(n / 2) - 1),
      false,
    ],
  ])('%s', async (_what, steal, ran, kept, setAside, enough) => {
    const host = hostWith(steal);
    const order: number[] = [];
    const r = await pairedRounds(
      async (i) => {
        order.push(i);
        return i;
      },
      () => undefined,
      host,
    );
    expect(order).toEqual(Array.from({ length: ran }, (_, i) => i));
    expect(r.kept).toHaveLength(kept);
    expect(r.setAside).toBe(setAside);
    expect(r.stealPct).toHaveLength(ran);
    expect(r.enough).toBe(enough);
    // The kept rounds are exactly the quiet ones, in order.
    expect(r.kept).toEqual(
      order.filter((i) => {
        const s = steal[i];
        return s === null || s === undefined || s <= 0.05;
      }),
    );
  });

  it('a row built on too few quiet rounds misses its target and says why', async () => {
    const r = await pairedRounds(
      async (i) => i,
      () => {},
      hostWith(Array(2 * n).fill(0.3)),
    );
    const row = markNoisy({ metric: 'detect vs parser', pass: true as boolean | null }, r);
    expect(row.pass).toBe(false);
    expect(row.metric).toContain(`${2 * n} of ${2 * n} rounds had host CPU steal above 5 %`);
    const report = markNoisy({ metric: 'report only', pass: null as boolean | null }, r);
    expect(report.pass).toBeNull();
    const fine = await pairedRounds(
      async (i) => i,
      () => {},
      hostWith(quiet),
    );
    const kept = { metric: 'detect vs parser', pass: true as boolean | null };
    expect(markNoisy(kept, fine)).toBe(kept);
  });
});
