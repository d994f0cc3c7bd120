// Resource versions compared as numbers. Kubernetes calls them opaque; every etcd3-backed API server
// hands out decimal etcd revisions, which grow with every write. Anything else (an aggregated API,
// a value a client made up) is "not comparable", and callers then act as if it were not newer.

const DECIMAL = /^[0-9]{1,30}$/;

/**
 * -1, 0 or 1 as `a` is older than, the same as or newer than `b`; null when either is missing or not
 * a decimal revision.
 */
export function compareResourceVersions(a: unknown, b: unknown): -1 | 0 | 1 | null {
  if (typeof a !== 'string' || typeof b !== 'string') return null;
  if (!DECIMAL.test(a) || !DECIMAL.test(b)) return null;
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** `a` is at least as new as `b`; false when not comparable. */
export function resourceVersionAtLeast(a: unknown, b: unknown): boolean {
  const c = compareResourceVersions(a, b);
  return c !== null && c >= 0;
}
