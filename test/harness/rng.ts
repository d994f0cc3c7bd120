// A small seeded pseudo-random generator (mulberry32), so the harness's probabilistic choices
// (duplicates, reordering, jitter, lost writes) are reproducible from a seed.

export type Rng = () => number;

/** Returns a function yielding floats in [0, 1), fully determined by `seed`. */
export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + MULBERRY32_STEP) >>> 0;
    return mulberry32(state);
  };
}

export const MULBERRY32_STEP = 0x6d2b79f5;

/** mulberry32's output function: a float in [0, 1) from a 32-bit state. */
export function mulberry32(state: number): number {
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** An integer in [min, max], both inclusive. */
export function rngInt(rng: Rng, min: number, max: number): number {
  if (max <= min) return min;
  return min + Math.floor(rng() * (max - min + 1));
}
