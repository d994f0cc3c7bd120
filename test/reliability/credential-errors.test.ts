// The KubePort promises typed errors only (shared/kube/port.ts). Unusable TLS material in the
// kubeconfig (client key or certificate data that is not a key or a certificate) must fail as a
// KubeError too, without quoting the material.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient } from '../../shared/kube/client.js';
import { loadKubeConfig } from '../../shared/kube/config.js';
import { isKubeError } from '../../shared/kube/errors.js';
import { testKubeConfig } from '../support/apiserver.js';
import { leaks, markedCredentials, markedKubeconfig } from './support/secrets.js';
import { systemClock } from '../../shared/runtime/clock.js';

const creds = markedCredentials();
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rel-creds-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('adapter: unusable client TLS material', () => {
  it.each([
    ['a closed local port', () => 'https://127.0.0.1:1'],
    ['the real API server', () => testKubeConfig().getCurrentCluster()?.server ?? ''],
  ])(
    'fails as a KubeError against %s, naming neither key nor certificate',
    async (_where, server) => {
      const path = join(dir, 'bad-tls.kubeconfig');
      await writeFile(path, markedKubeconfig(creds, { server: server(), insecure: true }));
      const kube = createKubeClient({
        clock: systemClock,
        kubeConfig: loadKubeConfig({ kubeconfigPath: path }),
        fieldManager: 'reliability',
        requestTimeoutMs: 2000,
      });
      const error = await kube.getPackageSource('anything').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Error);
      expect(leaks(String((error as Error).message), creds)).toEqual([]);
      // Today: a raw OpenSSL error ("error:068000A8:asn1 encoding routines::wrong tag") escapes the
      // transport, and every function answers 500 internal-error instead of a typed outcome.
      expect({ kubeError: isKubeError(error), message: (error as Error).message }).toMatchObject({
        kubeError: true,
      });
    },
  );
});
