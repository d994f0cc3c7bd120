// The process's memory of AG previous versions (docs/adr/0045): what it keeps, for how many, and
// that concurrent asks share one read. The API server side (one request per revision across
// redeliveries and sweeps) is proved on the real API server by
// test/integration/functions/history.test.ts; here the reads are counted by a stand-in.

import { describe, expect, it } from 'vitest';
import type { AgRef } from '../../../shared/core/objects/types.js';
import type { PreviousVersion } from '../../../shared/kube/port.js';
import { createPreviousVersions } from '../../../shared/recovery/previous-versions.js';

const ref: AgRef = { namespace: 'cozy-system', name: 'ag' };

function counted(answer: (rv: string) => Promise<PreviousVersion>) {
  const reads: string[] = [];
  return {
    reads,
    kube: {
      getArtifactGeneratorBefore: (_ref: AgRef, rv: string) => {
        reads.push(rv);
        return answer(rv);
      },
    },
  };
}

const found = (rv: string): PreviousVersion => ({
  kind: 'found',
  ag: { metadata: { ...ref, resourceVersion: rv, managedFields: [{ manager: 'x' }] } as never },
});

describe('previous versions kept by the process', () => {
  it.each<[string, PreviousVersion | Error, number]>([
    ['found: kept, the second ask reads nothing', found('9'), 1],
    ['absent: kept', { kind: 'absent' }, 1],
    ['unavailable (compacted): not kept, read again', { kind: 'unavailable', why: 'compacted' }, 2],
    ['a failed read: not kept, read again', new Error('etcdserver: request timed out'), 2],
  ])('%s', async (_label, answer, reads) => {
    const c = counted(async () => {
      if (answer instanceof Error) throw answer;
      return answer;
    });
    const memo = createPreviousVersions(c.kube);
    for (let i = 0; i < 2; i++) await memo.before(ref, '10').catch(() => undefined);
    expect(c.reads).toHaveLength(reads);
    expect(memo.known(ref, '10')).toBe(reads === 1);
  });

  it('concurrent asks for one revision share one read', async () => {
    let release!: (v: PreviousVersion) => void;
    const c = counted(() => new Promise((r) => (release = r)));
    const memo = createPreviousVersions(c.kube);
    const asks = [memo.before(ref, '10'), memo.before(ref, '10')];
    release(found('9'));
    const [a, b] = await Promise.all(asks);
    expect(c.reads).toEqual(['10']);
    expect(a).toEqual(b);
  });

  it('keeps at most the given number, dropping the least recently used', async () => {
    const c = counted(async (rv) => found(String(Number(rv) - 1)));
    const memo = createPreviousVersions(c.kube, 2);
    await memo.before(ref, '1');
    await memo.before(ref, '2');
    await memo.before(ref, '1'); // used again: '2' is now the oldest
    await memo.before(ref, '3');
    expect([memo.known(ref, '1'), memo.known(ref, '2'), memo.known(ref, '3')]).toEqual([
      true,
      false,
      true,
    ]);
  });

  it('keeps the previous version without its managedFields', async () => {
    const memo = createPreviousVersions(counted(async () => found('9')).kube);
    await memo.before(ref, '10');
    const kept = await memo.before(ref, '10');
    expect(kept.kind === 'found' && 'managedFields' in (kept.ag.metadata ?? {})).toBe(false);
    expect(kept.kind === 'found' && kept.ag.metadata?.resourceVersion).toBe('9');
  });

  it('a read that fails while nobody awaits it leaves no unhandled rejection', async () => {
    const memo = createPreviousVersions(
      counted(async () => {
        throw new Error('etcdserver: request timed out');
      }).kube,
    );
    void memo.before(ref, '10');
    await new Promise((r) => setTimeout(r, 20));
    expect(memo.known(ref, '10')).toBe(false);
  });
});
