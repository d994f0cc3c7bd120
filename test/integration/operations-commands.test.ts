// The commands docs/operations.md gives for "Prerequisites" (the one-command CRD check) and
// "Is it working?", taken from the document itself and run with the real kubectl against the real
// kube-apiserver (as the admin): each is accepted, and each shows what it promises: the CRD check
// exits 0 with every CRD installed and names the one it does not find; the AG columns show a
// force's tracking annotations (their names from shared/core); the Event query finds a force's
// Event by reason; the PackageSource columns show the Ready reason surface-stalled writes.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ANNOTATION_ATTEMPTS,
  ANNOTATION_LAST_RECOVERY_AT,
  EVENT_REASON_FORCED,
  REASON_STALLED,
} from '../../shared/core/index.js';
import {
  createPackageSource,
  makePackageSource,
  testKubeConfig,
  testKubeconfigPath,
  uniqueName,
  writePackageSourceStatus,
} from '../support/apiserver.js';
import { createAgWithStatus, stuckStatus } from '../support/ag-states.js';

import { REPO_ROOT } from '../support/manifests.js';
import * as k8s from '@kubernetes/client-node';

const run = promisify(execFile);
// kubectl's discovery cache goes to $HOME/.kube: a throw-away HOME, not the working directory.
const home = mkdtempSync(path.join(os.tmpdir(), 'swr-kubectl-home-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));
const kc = testKubeConfig();
const DOC = readFileSync(path.join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');

/** The `kubectl …` lines of the first ```sh block after `heading`. */
function commandsUnder(heading: string): string[] {
  const from = DOC.indexOf(heading);
  if (from < 0) throw new Error(`docs/operations.md has no "${heading}"`);
  const block = /```sh\n([\s\S]*?)```/.exec(DOC.slice(from))?.[1] ?? '';
  return block.split('\n').filter((l) => l.startsWith('kubectl '));
}

/** Runs a documented command line with the test cluster's admin kubeconfig. */
async function kubectl(line: string): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await run('sh', ['-c', line], {
      env: { PATH: process.env['PATH'] ?? '', HOME: home, KUBECONFIG: testKubeconfigPath() },
      timeout: 30_000,
    });
    return { code: 0, out: stdout, err: stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: x.code ?? -1, out: x.stdout ?? '', err: x.stderr ?? '' };
  }
}

const working = commandsUnder('### Is it working?');
const find = (needle: string): string => {
  const line = working.find((l) => l.includes(needle));
  if (line === undefined) throw new Error(`"Is it working?" has no command with ${needle}`);
  return line;
};

describe('docs/operations.md "Prerequisites": the one-command CRD check', () => {
  const [check] = commandsUnder('One command checks the CRDs');

  it('exits 0 on the test cluster, which has every CRD', async () => {
    expect(check).toMatch(/^kubectl get crd /);
    const r = await kubectl(check ?? '');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('packagesources.cozystack.io');
  });

  it('names a CRD it does not find, and exits non-zero', async () => {
    const r = await kubectl(`${check ?? ''} nosuchthings.example.com`);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('nosuchthings.example.com');
  });
});

describe('docs/operations.md "Is it working?"', () => {
  it('every command is accepted by the API server', async () => {
    expect(working.length).toBeGreaterThanOrEqual(8);
    for (const line of working.filter((l) => !l.includes('recovery-alarm'))) {
      const r = await kubectl(line);
      expect(r.err, line).not.toMatch(/error/i);
      expect(r.code, line).toBe(0);
    }
  });

  it("the AG columns show a force's tracking annotations", async () => {
    const at = '2026-12-02T14:00:00.000000000Z';
    const ag = await createAgWithStatus(kc, stuckStatus(Date.now() - 300_000), {
      annotations: { [ANNOTATION_ATTEMPTS]: '2', [ANNOTATION_LAST_RECOVERY_AT]: at },
    });
    const r = await kubectl(find('get artifactgenerators'));
    const row = r.out.split('\n').find((l) => l.includes(ag.metadata?.name ?? '?'));
    expect(row?.split(/\s+/)).toEqual([
      ag.metadata?.namespace,
      ag.metadata?.name,
      'Unknown',
      expect.any(String),
      '2',
      at,
    ]);
  });

  it("the Event query finds a force's Event by its reason", async () => {
    const name = uniqueName('ev');
    await kc.makeApiClient(k8s.EventsV1Api).createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { name, namespace: 'default' },
        eventTime: new k8s.V1MicroTime(),
        reportingController: 'cozystack.io/source-watcher-recovery',
        reportingInstance: 'test',
        action: 'Force',
        reason: EVENT_REASON_FORCED,
        type: 'Normal',
        note: 'attempt 1/5',
        regarding: { kind: 'ArtifactGenerator', name: 'x', namespace: 'default' },
      },
    });
    const r = await kubectl(find(`reason=${EVENT_REASON_FORCED}`));
    expect(r.out).toContain(EVENT_REASON_FORCED);
    expect(r.out).toContain('attempt 1/5');
  });

  it('the PackageSource columns show the Ready reason', async () => {
    const ps = await createPackageSource(makePackageSource());
    const name = ps.metadata?.name ?? '';
    await writePackageSourceStatus(
      name,
      {
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: REASON_STALLED,
            message: 'm',
            lastTransitionTime: '2026-12-02T14:00:00Z',
          },
        ],
      },
      kc,
    );
    const r = await kubectl(find('get packagesources'));
    const row = r.out.split('\n').find((l) => l.startsWith(`${name} `));
    expect(row?.split(/\s+/)).toEqual([name, 'False', REASON_STALLED]);
  });
});
