// A short, stable, non-cryptographic hash for deterministic object names: two 32-bit FNV-1a
// passes with different offset bases, as 16 hex digits. Collisions only merge two Events.

const FNV_PRIME = 0x01000193;

function fnv1a32(text: string, basis: number): number {
  let h = basis >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME) >>> 0;
  }
  return h >>> 0;
}

export function shortHash(text: string): string {
  const a = fnv1a32(text, 0x811c9dc5);
  const b = fnv1a32(text, 0x050c5d1f);
  return a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0');
}
