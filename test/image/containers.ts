// The built image run as the Knative Services in knative/ run it, with podman
// (.ci/image/podman.sh): the container's command, its securityContext (user, read-only root file
// system, dropped capabilities, no privilege escalation), recovery-config as its environment,
// PORT, and the ServiceAccount's token where a pod has it (in-cluster config). Host network: the
// container reaches the test API server and the sink on 127.0.0.1, and the test reaches it there.

import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { K8sObject } from '../support/manifests.js';
import { REPO_ROOT } from '../support/manifests.js';

const run = promisify(execFile);

export async function podman(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run('bash', [path.join(REPO_ROOT, '.ci/image/podman.sh'), ...args], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`podman ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim()}`, {
      cause: err,
    });
  }
}

export interface ContainerSpec {
  command: string[];
  envFrom?: { configMapRef?: { name: string } }[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  securityContext?: {
    runAsUser?: number;
    runAsGroup?: number;
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
}

export interface ServiceSpec {
  name: string;
  serviceAccountName: string;
  container: ContainerSpec;
}

export function serviceSpec(service: K8sObject): ServiceSpec {
  const spec = (
    service.spec as {
      template: { spec: { serviceAccountName: string; containers: ContainerSpec[] } };
    }
  ).template.spec;
  const container = spec.containers[0];
  if (container === undefined) throw new Error(`Service ${service.metadata.name}: no container`);
  return { name: service.metadata.name, serviceAccountName: spec.serviceAccountName, container };
}

/** What a pod's ServiceAccount volume holds: token, ca.crt, namespace. */
export function serviceAccountDir(token: string | undefined, caPem: string, ns: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'swr-image-sa-'));
  // As the kubelet mounts it: readable by the container's user (65532), not only by root.
  chmodSync(dir, 0o755);
  if (token !== undefined) writeFileSync(path.join(dir, 'token'), token, { mode: 0o644 });
  writeFileSync(path.join(dir, 'ca.crt'), caPem, { mode: 0o644 });
  writeFileSync(path.join(dir, 'namespace'), ns, { mode: 0o644 });
  return dir;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface RunOptions {
  image: string;
  containerName: string;
  port: number;
  /** The recovery-config ConfigMap's data (envFrom). */
  config: Readonly<Record<string, string>>;
  /** Extra variables: K_SINK from the SinkBinding, the API server's address. */
  env: Readonly<Record<string, string>>;
  serviceAccountDir: string;
}

/** podman run arguments for one Service's container; refuses a securityContext it cannot map. */
export function runArgs(service: ServiceSpec, o: RunOptions): string[] {
  const sc = service.container.securityContext ?? {};
  if (sc.runAsUser === undefined || sc.runAsGroup === undefined) {
    throw new Error(`Service ${service.name}: no runAsUser/runAsGroup`);
  }
  if ((sc.capabilities?.add ?? []).length > 0) {
    throw new Error(`Service ${service.name}: adds capabilities`);
  }
  const env: Record<string, string> = {};
  for (const from of service.container.envFrom ?? []) {
    // recovery-config's name carries a hash of its content (docs/adr/0064).
    if (!/^recovery-config-[a-z0-9]{10}$/.test(from.configMapRef?.name ?? '')) {
      throw new Error(`Service ${service.name}: envFrom other than recovery-config`);
    }
    Object.assign(env, o.config);
  }
  for (const e of service.container.env ?? []) {
    // No valueFrom: a default Knative install refuses the downward API (docs/adr/0066).
    if (e.value !== undefined) env[e.name] = e.value;
    else throw new Error(`Service ${service.name}: env ${e.name} from an unsupported source`);
  }
  // The container runtime gives a pod's container its pod name as HOSTNAME (reportingInstance).
  env['HOSTNAME'] = o.containerName;
  // Knative sets PORT to the containerPort; on the host network each container needs its own.
  env['PORT'] = String(o.port);
  Object.assign(env, o.env);
  return [
    'run',
    '--detach',
    '--name',
    o.containerName,
    '--network=host',
    '--user',
    `${sc.runAsUser}:${sc.runAsGroup}`,
    // Kubernetes mounts no tmpfs over a read-only root: neither does this.
    ...(sc.readOnlyRootFilesystem === true ? ['--read-only', '--read-only-tmpfs=false'] : []),
    ...(sc.capabilities?.drop ?? []).flatMap((c) => ['--cap-drop', c]),
    ...(sc.allowPrivilegeEscalation === false ? ['--security-opt', 'no-new-privileges'] : []),
    '--volume',
    `${o.serviceAccountDir}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
    ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    o.image,
    ...service.container.command,
  ];
}

/** Polls GET url until it answers 200; throws with the container's log when it never does. */
export async function waitReady(url: string, containerName: string, ms: number): Promise<number> {
  const started = Date.now();
  let last = 'no answer';
  while (Date.now() - started < ms) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return Date.now() - started;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    const state = await podman('inspect', '--format', '{{.State.Status}}', containerName);
    if (state !== 'running') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const logs = await podman('logs', containerName).catch((e: Error) => e.message);
  throw new Error(`${containerName}: ${url} not ready (${last})\n--- container log ---\n${logs}`);
}
