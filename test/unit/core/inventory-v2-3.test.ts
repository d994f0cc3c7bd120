// source-watcher v2.3's inventory (issue 35): an entry has a `kind`, `ExternalArtifact` or
// `Namespace` (a Namespace the AG manages), and an ExternalArtifact may live in another namespace.
// The parser keeps the kind, the ExternalArtifact heal reads only ExternalArtifact entries, and the
// lost-write signal sees an entry whose kind changed as moved outputs. v2.1 entries have no kind.

import { describe, expect, it } from 'vitest';
import {
  artifactInventory,
  outputsMovedWhileUnknown,
  parseArtifactGenerator,
  type ArtifactGenerator,
  type InventoryEntry,
} from '../../../shared/core/index.js';
import { makeAg } from './fixtures.js';

const V23_INVENTORY = [
  { kind: 'ExternalArtifact', name: 'platform', namespace: 'cozy-system', digest: 'sha256:a' },
  { kind: 'ExternalArtifact', name: 'tenant', namespace: 'tenant-a', digest: 'sha256:b' },
  { kind: 'Namespace', name: 'tenant-a' },
  { name: 'legacy', namespace: 'cozy-system', digest: 'sha256:c', filename: 'l.tar.gz' },
];

/** The realistic stuck AG with `inventory`, read as detect reads an event's data. */
function parsedWith(inventory: readonly Record<string, unknown>[]): ArtifactGenerator {
  const ag = structuredClone(makeAg()) as Omit<ArtifactGenerator, 'status'> & {
    status: Record<string, unknown>;
  };
  ag.status.inventory = inventory;
  const parsed = parseArtifactGenerator(ag);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.ag;
}

describe('a source-watcher v2.3 inventory', () => {
  it('keeps every entry with its kind (absent on a v2.1 entry)', () => {
    const entries = parsedWith(V23_INVENTORY).status?.inventory ?? [];
    expect(entries.map((e: InventoryEntry) => e.kind)).toEqual([
      'ExternalArtifact',
      'ExternalArtifact',
      'Namespace',
      undefined,
    ]);
  });

  it('a kind that is not a string is dropped, the rest of the entry kept', () => {
    const [entry] = parsedWith([{ kind: 7, name: 'x', namespace: 'n' }]).status?.inventory ?? [];
    expect(entry).toEqual({ name: 'x', namespace: 'n' });
  });

  it.each<[string, Record<string, unknown>[], string[]]>([
    [
      'the v2.3 mix',
      V23_INVENTORY,
      ['cozy-system/platform', 'tenant-a/tenant', 'cozy-system/legacy'],
    ],
    [
      'a managed Namespace that also names a namespace',
      [{ kind: 'Namespace', name: 'tenant-b', namespace: 'tenant-b' }],
      [],
    ],
    ['only v2.1 entries', [{ name: 'p', namespace: 'n' }], ['n/p']],
  ])('the heal reads only its ExternalArtifacts: %s', (_name, inventory, expected) => {
    const ag = parsedWith(inventory);
    expect(artifactInventory(ag).map((e) => `${e.namespace}/${e.name}`)).toEqual(expected);
  });

  it.each<[string, Record<string, unknown>[], boolean]>([
    ['the same entries', V23_INVENTORY, false],
    [
      'one entry whose kind changed',
      V23_INVENTORY.map((e, i) => (i === 2 ? { ...e, kind: 'ExternalArtifact' } : e)),
      true,
    ],
    [
      'a kind added to a v2.1 entry',
      V23_INVENTORY.map((e) => ({ kind: 'ExternalArtifact', ...e })),
      true,
    ],
  ])('the lost-write signal: %s', (_name, current, moved) => {
    expect(outputsMovedWhileUnknown(parsedWith(V23_INVENTORY), parsedWith(current))).toBe(moved);
  });
});
