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

/**
 * The size named by the environment variable `variable` (`value`; unset or empty: `fallback`);
 * anything but one of `choices` is refused with them.
 */
export function sizeNamed<S extends string>(
  variable: string,
  value: string | undefined,
  choices: readonly S[],
  fallback: S,
): S {
  if (value === undefined || value === '') return fallback;
  const chosen = choices.find((c) => c === value);
  if (chosen !== undefined) return chosen;
  const quoted = choices.map((c) => JSON.stringify(c));
  const list =
    quoted.length > 1
      ? `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`
      : quoted[0];
  throw new Error(`${variable} must be ${list ?? '(nothing)'}, got ${JSON.stringify(value)}`);
}
