// Each Knative Service: scale, visibility, identity, image and entry point, probes, resources and
// the restricted securityContext. Checked in every render (base and both overlays).

import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  findObject,
  findRecoveryConfig,
  renderKustomize,
  type K8sObject,
} from '../../support/manifests.js';
import { RENDERS } from './renders.js';
import { DELIVERY_MARGIN_MS } from '../../../shared/runtime/env.js';
import { loadPodConfig } from '../../support/pod-config.js';

const IMAGE = 'ghcr.io/cozystack/source-watcher-recovery:0.1.0';
const HEALTH = { liveness: '/health/liveness', readiness: '/health/readiness' };
const KNATIVE_MAX_TIMEOUT_SECONDS = 600;

interface Probe {
  httpGet?: { path?: string; port?: number | string };
}
interface Container {
  name?: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: { containerPort?: number; name?: string }[];
  envFrom?: { configMapRef?: { name?: string } }[];
  env?: { name?: string; value?: string; valueFrom?: { fieldRef?: { fieldPath?: string } } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
}
interface ServiceShape {
  metadata: K8sObject['metadata'];
  spec: {
    template: {
      metadata: { annotations?: Record<string, string> };
      spec: {
        serviceAccountName?: string;
        enableServiceLinks?: boolean;
        containerConcurrency?: number;
        timeoutSeconds?: number;
        containers: Container[];
      };
    };
  };
}

const SERVICES: [render: string, service: string][] = RENDERS.flatMap((render) =>
  ['detect', 'force-drift', 'surface-stalled', 'dead-letter', 'heal-external-artifacts']
    .filter((s) => !(render.endsWith('flux-only') && s === 'surface-stalled'))
    .map((s): [string, string] => [render, s]),
);

function service(render: string, name: string): ServiceShape {
  return findObject(
    renderKustomize(render),
    'Service',
    name,
    'serving.knative.dev',
  ) as unknown as ServiceShape;
}
function container(svc: ServiceShape): Container {
  expect(svc.spec.template.spec.containers).toHaveLength(1);
  return svc.spec.template.spec.containers[0] as Container;
}

/** Kubernetes quantities used here: m (milli-CPU), plain cores, Mi and Gi. */
function quantity(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(m|Mi|Gi)?$/.exec(q);
  if (m === null) throw new Error(`unsupported quantity ${q}`);
  const n = Number(m[1]);
  return m[2] === 'm' ? n / 1000 : m[2] === 'Mi' ? n * 2 ** 20 : m[2] === 'Gi' ? n * 2 ** 30 : n;
}

describe.each(SERVICES)('%s: Service %s', (render, name) => {
  it('scales to zero, has a bounded max-scale, and is cluster-local', () => {
    const svc = service(render, name);
    const annotations = svc.spec.template.metadata.annotations ?? {};
    expect(annotations['autoscaling.knative.dev/min-scale']).toBe('0');
    const max = annotations['autoscaling.knative.dev/max-scale'] ?? '';
    expect(max).toMatch(/^[1-9][0-9]*$/);
    expect(Number(max)).toBeLessThanOrEqual(10);
    expect(svc.metadata.labels?.['networking.knative.dev/visibility']).toBe('cluster-local');
  });

  it('sets containerConcurrency and timeoutSeconds deliberately', () => {
    const spec = service(render, name).spec.template.spec;
    expect(spec.containerConcurrency).toBeGreaterThan(0);
    expect(spec.timeoutSeconds).toBeGreaterThan(0);
    expect(spec.timeoutSeconds).toBeLessThanOrEqual(KNATIVE_MAX_TIMEOUT_SECONDS);
    if (name === 'detect' || name === 'surface-stalled') {
      // A full sweep of 10,000 AGs runs inside one request (docs/adr/0005-knative-wiring.md).
      expect(spec.timeoutSeconds).toBeGreaterThanOrEqual(120);
    }
  });

  it("each delivery's deadline ends inside the Service's timeoutSeconds (ADR 57)", () => {
    const svc = service(render, name);
    const spec = svc.spec.template.spec;
    const env = Object.fromEntries(
      (container(svc).env ?? [])
        .filter((e) => e.value !== undefined)
        .map((e) => [e.name ?? '', e.value ?? '']),
    );
    const { deliveryDeadlineMs } = loadPodConfig(env);
    if (name === 'dead-letter') return; // it calls nothing and arms no deadline
    expect(deliveryDeadlineMs).toBe((spec.timeoutSeconds ?? 0) * 1000 - DELIVERY_MARGIN_MS);
  });

  it('runs as its own ServiceAccount, without service links', () => {
    const objects = renderKustomize(render);
    const spec = service(render, name).spec.template.spec;
    expect(spec.serviceAccountName).toBe(name);
    findObject(objects, 'ServiceAccount', name);
    expect(spec.enableServiceLinks).toBe(false);
  });

  it('runs the shared image with its own entry point', () => {
    const c = container(service(render, name));
    expect(c.image).toBe(IMAGE);
    expect(c.command).toEqual(['node', `dist/functions/${name}/main.js`]);
    expect(c.args).toBeUndefined();
  });

  it('entry point has a source file functions/<name>/main.ts', () => {
    const c = container(service(render, name));
    const js = c.command?.[1] ?? '';
    const source = js.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    expect(source).toBe(`functions/${name}/main.ts`);
    expect(existsSync(path.join(REPO_ROOT, source)), `${source} must exist`).toBe(true);
  });

  it('listens on 8080 and reads recovery-config', () => {
    const c = container(service(render, name));
    expect(c.ports?.map((p) => p.containerPort)).toEqual([8080]);
    // The generated recovery-config, by its hashed name (docs/adr/0064).
    const config = findRecoveryConfig(renderKustomize(render));
    expect(config.metadata.name).toMatch(/^recovery-config-[a-z0-9]{10}$/);
    expect(c.envFrom?.map((e) => e.configMapRef?.name)).toEqual([config.metadata.name]);
  });

  it('takes nothing from the downward API: a default Knative install refuses fieldRef (ADR 66)', () => {
    // kubernetes.podspec-fieldref is off by default; the Events' reportingInstance is HOSTNAME,
    // which the container runtime sets to the pod's name (ADR 33).
    const env = container(service(render, name)).env ?? [];
    expect(env.filter((e) => e.valueFrom !== undefined).map((e) => e.name)).toEqual([]);
    const config = loadPodConfig({ HOSTNAME: `${name}-00001-deployment-7d9f-abcde` });
    expect(config.events.reportingInstance).toBe(`${name}-00001-deployment-7d9f-abcde`);
  });

  it('has liveness and readiness probes on the health paths (no foreign port)', () => {
    const c = container(service(render, name));
    const port = c.ports?.[0]?.containerPort;
    for (const [probe, wanted] of [
      [c.livenessProbe, HEALTH.liveness],
      [c.readinessProbe, HEALTH.readiness],
    ] as const) {
      expect(probe?.httpGet?.path).toBe(wanted);
      const probePort = probe?.httpGet?.port;
      expect(probePort === undefined || probePort === port).toBe(true);
    }
  });

  it('requests and limits resources (memory limit ≥ request)', () => {
    const r = container(service(render, name)).resources;
    const cpu = r?.requests?.cpu;
    const memory = r?.requests?.memory;
    const memoryLimit = r?.limits?.memory;
    expect(cpu).toBeDefined();
    expect(memory).toBeDefined();
    expect(memoryLimit).toBeDefined();
    expect(quantity(cpu ?? '')).toBeGreaterThan(0);
    expect(quantity(memoryLimit ?? '')).toBeGreaterThanOrEqual(quantity(memory ?? ''));
    expect(quantity(memoryLimit ?? '')).toBeLessThanOrEqual(512 * 2 ** 20);
  });

  it('has a restricted securityContext', () => {
    const sc = container(service(render, name)).securityContext ?? {};
    expect(sc).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect((sc.capabilities as { add?: unknown }).add).toBeUndefined();
    expect(sc.privileged).not.toBe(true);
    if (sc.runAsUser !== undefined) expect(sc.runAsUser).not.toBe(0);
  });
});
