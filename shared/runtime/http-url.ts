// Whether a configured address is an http(s) URL (the loaders of env.ts and metrics-config.ts).

export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
