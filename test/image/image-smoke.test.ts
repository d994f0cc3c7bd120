// The built image (IMAGE, default localhost/source-watcher-recovery:ci, from .ci/image/build.sh),
// run as the Knative Services of knative/ run it (test/image/containers.ts): every function
// answers readiness; the process is user 65532 with no capabilities on a read-only root; detect
// turns one ApiServerSource event of a stuck AG into a force action, and force-drift, given that
// action, really forces the AG on the test cluster. Missing podman or image fails the test.

import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloudEventV1 } from 'cloudevents';
import {
  ACTION_FORCE,
  ANNOTATION_ATTEMPTS,
  ANNOTATION_REQUESTED_AT,
  APISERVER_UPDATE,
} from '../../shared/core/index.js';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import {
  agRefOf,
  deleteArtifactGenerator,
  getArtifactGenerator,
  testKubeConfig,
} from '../support/apiserver.js';
import { createAgWithStatus, stuckStatus } from '../support/ag-states.js';
import { cloudEvent, postEvent, startEventSink, type EventSink } from '../support/http-events.js';
import { isServiceAccountName, serviceAccountToken } from '../support/identities.js';
import { RECOVERY_NAMESPACE, findRecoveryConfig, renderKustomize } from '../support/manifests.js';
import {
  freePort,
  podman,
  runArgs,
  serviceAccountDir,
  serviceSpec,
  waitReady,
  type ServiceSpec,
} from './containers.js';

const IMAGE = process.env['IMAGE'] ?? 'localhost/source-watcher-recovery:ci';
const FUNCTIONS = [
  'detect',
  'force-drift',
  'surface-stalled',
  'dead-letter',
  'heal-external-artifacts',
];
const kc = testKubeConfig();
const manifests = renderKustomize('knative');
const services = new Map<string, ServiceSpec>(
  manifests
    .filter((o) => o.kind === 'Service' && o.apiVersion === 'serving.knative.dev/v1')
    .map((o) => [o.metadata.name, serviceSpec(o)]),
);
const started: { name: string; container: string; url: string }[] = [];
const dirs: string[] = [];
let sink: EventSink;
let stuck: ArtifactGenerator | undefined;

function recoveryConfig(): Record<string, string> {
  return findRecoveryConfig(manifests).data;
}

function caPem(): string {
  const cluster = kc.getCurrentCluster();
  if (cluster?.caData !== undefined) return Buffer.from(cluster.caData, 'base64').toString('utf8');
  if (cluster?.caFile !== undefined) return readFileSync(cluster.caFile, 'utf8');
  throw new Error('the test kubeconfig has no CA');
}

function startedAs(name: string): { container: string; url: string } {
  const s = started.find((x) => x.name === name);
  if (s === undefined) throw new Error(`${name} did not start`);
  return s;
}
const url = (name: string): string => startedAs(name).url;

beforeAll(async () => {
  await podman('image', 'exists', IMAGE).catch((err: Error) => {
    throw new Error(`image ${IMAGE} not found: build it with bash .ci/image/build.sh`, {
      cause: err,
    });
  });
  sink = await startEventSink();
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const config = { ...recoveryConfig(), BROKER_URL: sink.url };
  for (const name of FUNCTIONS) {
    const service = services.get(name);
    if (service === undefined) throw new Error(`knative/ renders no Service ${name}`);
    const sa = service.serviceAccountName;
    const dir = serviceAccountDir(
      isServiceAccountName(sa) ? serviceAccountToken(sa) : undefined,
      caPem(),
      RECOVERY_NAMESPACE,
    );
    dirs.push(dir);
    const port = await freePort();
    const containerName = `swr-smoke-${process.pid}-${name}`;
    const env: Record<string, string> = {
      KUBERNETES_SERVICE_HOST: server.hostname,
      KUBERNETES_SERVICE_PORT: server.port,
      // SinkBinding sets K_SINK on detect (knative/functions/detect/sinkbinding.yaml).
      ...(name === 'detect' ? { K_SINK: sink.url } : {}),
    };
    await podman(
      ...runArgs(service, {
        image: IMAGE,
        containerName,
        port,
        config,
        env,
        serviceAccountDir: dir,
      }),
    );
    started.push({ name, container: containerName, url: `http://127.0.0.1:${port}` });
    const ms = await waitReady(`http://127.0.0.1:${port}/health/readiness`, containerName, 60_000);
    console.error(`image smoke: ${name} ready in ${ms} ms`);
  }
});

afterAll(async () => {
  for (const s of started) {
    await podman('rm', '--force', '--time', '2', s.container).catch(() => undefined);
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  if (stuck !== undefined) await deleteArtifactGenerator(agRefOf(stuck), kc).catch(() => undefined);
  await sink?.close();
});

describe('the image, run as the Knative Services run it', () => {
  it.each(FUNCTIONS)('%s answers readiness and liveness', async (name) => {
    expect((await fetch(`${url(name)}/health/readiness`)).status).toBe(200);
    expect((await fetch(`${url(name)}/health/liveness`)).status).toBe(200);
  });

  it.each(FUNCTIONS)(
    '%s runs as 65532:65532, no capabilities, on a read-only root',
    async (name) => {
      const { container } = startedAs(name);
      const pid = await podman('inspect', '--format', '{{.State.Pid}}', container);
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const field = (f: string): string =>
        new RegExp(`^${f}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? '';
      expect(field('Uid').split(/\s+/)).toEqual(['65532', '65532', '65532', '65532']);
      expect(field('Gid').split(/\s+/)).toEqual(['65532', '65532', '65532', '65532']);
      expect(field('CapEff')).toBe('0000000000000000');
      expect(field('CapBnd')).toBe('0000000000000000');
      expect(field('NoNewPrivs')).toBe('1');
      for (const dir of ['/app', '/tmp']) {
        const write = await podman(
          'exec',
          container,
          'node',
          '-e',
          `try { require('fs').writeFileSync('${dir}/probe', 'x'); console.log('written') } catch (e) { console.log(e.code) }`,
        );
        expect(write, dir).toBe('EROFS');
      }
    },
  );

  it('detect turns a stuck AG event into a force, force-drift forces it on the cluster', async () => {
    // Ready=Unknown for 10 minutes: past the shipped grace period (2m30s) on the real clock.
    stuck = await createAgWithStatus(kc, stuckStatus(Date.now() - 600_000));
    const ref = agRefOf(stuck);
    sink.events.length = 0;
    const event = cloudEvent({
      type: APISERVER_UPDATE,
      source: kc.getCurrentCluster()?.server ?? '',
      subject: `/apis/source.extensions.fluxcd.io/v1beta1/namespaces/${ref.namespace}/artifactgenerators/${ref.name}`,
      data: stuck,
      extensions: {
        kind: 'ArtifactGenerator',
        apiversion: 'source.extensions.fluxcd.io/v1beta1',
        name: ref.name,
        namespace: ref.namespace,
      },
    });
    expect((await postEvent(url('detect'), event)).status).toBe(200);
    const forces = sink.events.filter((e) => e.type === ACTION_FORCE);
    expect(forces.map((e) => e.subject)).toEqual([`${ref.namespace}/${ref.name}`]);
    const before = await getArtifactGenerator(ref, kc);
    expect(before.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toBeUndefined();
    const answer = await postEvent(url('force-drift'), forces[0] as CloudEventV1<unknown>).catch(
      async (err: Error) => {
        const log = await podman('logs', startedAs('force-drift').container);
        throw new Error(`force-drift gave no answer (${err.message})\n--- its log ---\n${log}`, {
          cause: err,
        });
      },
    );
    expect(answer.status).toBe(200);
    const after = await getArtifactGenerator(ref, kc);
    expect(after.metadata?.annotations?.[ANNOTATION_REQUESTED_AT]).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(after.metadata?.annotations?.[ANNOTATION_ATTEMPTS]).toBe('1');
  });
});
