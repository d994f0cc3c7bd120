// ISO 8601 durations as Knative delivery specs use them (backoffDelay "PT0.2S", timeout "PT30S").
// Years and months have no fixed length and are rejected.

const PATTERN =
  /^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** Milliseconds of an ISO 8601 duration such as PT0.2S, PT1M30S, P1D. Throws on anything else. */
export function parseIsoDuration(text: string): number {
  const m = PATTERN.exec(text.trim());
  if (!m || text.trim() === 'P' || text.trim().endsWith('T')) {
    throw new Error(`invalid ISO 8601 duration "${text}" (expected e.g. PT0.2S, PT1M, P1D)`);
  }
  const [, w, d, h, min, s] = m;
  const part = (v: string | undefined, unitMs: number): number =>
    v === undefined ? 0 : Number(v) * unitMs;
  return Math.round(
    part(w, 604_800_000) +
      part(d, 86_400_000) +
      part(h, 3_600_000) +
      part(min, 60_000) +
      part(s, 1000),
  );
}
