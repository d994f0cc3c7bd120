// Small statistics over samples: median and nearest-rank percentiles.

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

/** The median, or NaN for an empty sample (a row with nothing measured). */
export function medianOrNaN(samples: readonly number[]): number {
  return samples.length === 0 ? NaN : median(samples);
}

/** Nearest-rank percentile (p in 0..100) of a non-empty sample. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error('percentile of an empty sample');
  if (!(p >= 0 && p <= 100)) throw new Error(`percentile must be within 0..100, got ${p}`);
  const sorted = [...samples].sort((a, b) => a - b);
  if (p === 50 && sorted.length % 2 === 0) {
    const hi = sorted.length / 2;
    return ((sorted[hi - 1] as number) + (sorted[hi] as number)) / 2;
  }
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

export function mean(samples: readonly number[]): number {
  if (samples.length === 0) throw new Error('mean of an empty sample');
  return samples.reduce((a, b) => a + b, 0) / samples.length;
}

/** The least, the greatest and the mean (to two decimals) of load-average samples. */
export function loadSummary(samples: readonly number[]): {
  min: number;
  max: number;
  mean: number;
} {
  return {
    min: Math.min(...samples),
    max: Math.max(...samples),
    mean: Math.round(mean(samples) * 100) / 100,
  };
}
