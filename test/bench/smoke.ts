// The bench smoke (`npm run bench:smoke`, run by CI): every selected row at small sizes, so that a
// benchmark that no longer runs fails CI. Its numbers are not results: docs/benchmarks.md quotes
// only full runs. Set by run.ts's --smoke flag (BENCH_SMOKE=1 for the modules).

export const SMOKE_ENV = 'BENCH_SMOKE';

export function smokeMode(): boolean {
  return process.env[SMOKE_ENV] === '1';
}

/** `full` in a normal run, `small` in the smoke. */
export function sized<T>(full: T, small: T): T {
  return smokeMode() ? small : full;
}
