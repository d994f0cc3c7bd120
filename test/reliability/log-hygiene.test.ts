// Log hygiene: functions whose kubeconfig carries known marker credentials (a bearer token, a
// password, client certificate and key data) hit every kind of API error, at trace level; no
// marker, no base64 of one, no PEM armour may appear in any log line.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APISERVER_DELETE,
  ACTION_FORCE,
  ACTION_STALLED,
  APISERVER_REF_UPDATE,
  APISERVER_UPDATE,
  formatTimeNano,
} from '../../shared/core/index.js';
import {
  AG_API_VERSION,
  AG_KIND,
  type ArtifactGenerator,
} from '../../shared/core/objects/types.js';
import { loadKubeConfig } from '../../shared/kube/config.js';
import { createLogger } from '../../shared/runtime/logger.js';
import {
  agRefOf,
  createPackageSource,
  makePackageSource,
  uniqueName,
} from '../support/apiserver.js';
import { createAgWithStatus, stuckStatus } from '../support/ag-states.js';
import { cloudEvent, postEvent } from '../support/http-events.js';
import type { FaultRule } from '../support/kube-proxy.js';
import { deleteAlarm } from '../support/recovery-alarm.js';
import {
  API_FUNCTION_NAMES as FUNCTION_NAMES,
  SettableClock,
  startFunction,
  type ApiFunctionName as FunctionName,
} from '../harness/functions.js';
import { LogCapture } from '../harness/system/log-capture.js';
import { resyncPing } from '../support/http-events.js';
import { functionFile } from './support/function-file.js';
import {
  forbiddenStrings,
  leaks,
  markedCredentials,
  markedKubeconfig,
  type KubeconfigTarget,
} from './support/secrets.js';

const { T0, NS, kc, suite } = functionFile('hygiene', 'rel-lh', 'nothing');
const creds = markedCredentials();
let dir: string;
let ag: ArtifactGenerator;
const scanned = { lines: 0, requests: 0 };
const alarms: string[] = [];
const alarmName = (fn: string): string => {
  const name = uniqueName(`lh-${fn}`);
  alarms.push(name);
  return name;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rel-hygiene-'));
  const name = uniqueName('lh');
  const ps = await createPackageSource(makePackageSource({ name }), kc);
  ag = await createAgWithStatus(kc, stuckStatus(T0 - 60_000), {
    name,
    namespace: NS,
    owner: { name, uid: ps.metadata?.uid ?? '' },
  });
});
afterAll(async () => {
  console.log(
    `[log hygiene] requests made: ${scanned.requests}; log lines scanned: ${scanned.lines}; ` +
      `forbidden strings checked per line: ${forbiddenStrings(creds).length}`,
  );
  for (const name of alarms) await deleteAlarm(kc, name);
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** Events that make each function read and (with a stuck AG) write. */
function eventsFor(fn: FunctionName): ReturnType<typeof cloudEvent>[] {
  const ref = agRefOf(ag);
  const ext = {
    kind: AG_KIND,
    apiversion: AG_API_VERSION,
    name: ref.name,
    namespace: ref.namespace,
  };
  const action = {
    ...ref,
    resourceVersion: ag.metadata?.resourceVersion ?? '',
    attempts: 0,
    decidedAt: formatTimeNano(T0),
  };
  const ping = resyncPing({});
  const grace: ArtifactGenerator = { ...ag, status: stuckStatus(T0 - 5_000) };
  switch (fn) {
    case 'detect':
      return [
        cloudEvent({
          type: APISERVER_REF_UPDATE,
          data: { kind: AG_KIND, ...ref },
          extensions: ext,
        }),
        cloudEvent({ type: APISERVER_UPDATE, data: grace, extensions: ext }),
        ping,
      ];
    case 'force-drift':
      return [cloudEvent({ type: ACTION_FORCE, data: action })];
    case 'surface-stalled':
      return [
        cloudEvent({ type: APISERVER_UPDATE, data: ag, extensions: ext }),
        cloudEvent({ type: ACTION_STALLED, data: action }),
        ping,
      ];
    case 'heal-external-artifacts': {
      // A deleted ExternalArtifact of the AG: it reads the AG and lists its ExternalArtifacts.
      const ea = {
        apiVersion: 'source.toolkit.fluxcd.io/v1',
        kind: 'ExternalArtifact',
        metadata: {
          ...ref,
          uid: 'ea-uid',
          labels: { 'source.extensions.fluxcd.io/generator': ag.metadata?.uid ?? '' },
        },
        spec: { sourceRef: { apiVersion: AG_API_VERSION, kind: AG_KIND, ...ref } },
      };
      const eaExt = { ...ext, kind: 'ExternalArtifact', apiversion: ea.apiVersion };
      return [cloudEvent({ type: APISERVER_DELETE, data: ea, extensions: eaExt })];
    }
  }
}

async function kubeconfigFile(
  name: string,
  target: KubeconfigTarget,
  user?: 'token' | 'basic',
): Promise<string> {
  const path = join(dir, `${name}.kubeconfig`);
  await writeFile(path, markedKubeconfig(creds, target, user), { mode: 0o600 });
  return path;
}

/** Runs every function's events against `kubeconfigPath`, once per fault, at trace level. */
async function exercise(
  logs: LogCapture,
  kubeconfigPath: string,
  faults: readonly (Omit<FaultRule, 'match'> & { writesOnly?: boolean })[],
  tag?: string,
): Promise<number[]> {
  const statuses: number[] = [];
  for (const fn of FUNCTION_NAMES) {
    const server = await startFunction({
      fn,
      kubeConfig: loadKubeConfig({ kubeconfigPath }),
      clock: new SettableClock(T0),
      requestTimeoutMs: 400,
      logger: createLogger({ name: fn, level: 'trace', destination: logs }),
      sinkUrl: suite.sink.url,
      // NS holds the owned AG: a PackageSource namespace for the functions (docs/adr/0053).
      env: { ALARM_NAME: alarmName(fn), RECOVERY_PACKAGESOURCE_AG_NAMESPACES: NS },
    });
    try {
      for (const fault of faults.length > 0 ? faults : [undefined]) {
        const handle =
          fault === undefined || tag === undefined
            ? undefined
            : suite.proxy.addFault({
                ...fault,
                match: {
                  clientTag: tag,
                  ...(fault.writesOnly === true ? { verb: ['patch', 'create', 'delete'] } : {}),
                },
              } as FaultRule);
        try {
          for (const event of eventsFor(fn)) {
            statuses.push((await postEvent(server.url, event)).status);
            scanned.requests++;
          }
        } finally {
          handle?.remove();
        }
      }
    } finally {
      await server.close();
    }
  }
  return statuses;
}

const API_ERRORS = [
  { kind: 'status', status: 401 },
  { kind: 'status', status: 403 },
  { kind: 'status', status: 500 },
  { kind: 'reset' },
  { kind: 'timeout' },
  { kind: 'status', status: 403, writesOnly: true },
  { kind: 'status', status: 500, writesOnly: true },
  { kind: 'reset', writesOnly: true },
] as const;

/** The functions' log lines, parsed (records) and as written (text, for the leak scan). */
function captureLogs(): LogCapture & { text(): string } {
  const written: string[] = [];
  return Object.assign(new LogCapture((line) => void written.push(line)), {
    text: () => written.join(''),
  });
}

function expectClean(logs: ReturnType<typeof captureLogs>): void {
  const text = logs.text();
  scanned.lines += logs.records.length;
  expect(text.length).toBeGreaterThan(0);
  expect(leaks(text, creds)).toEqual([]);
}

describe('log hygiene', () => {
  it('the leak check finds every planted secret form (so a leak would fail these tests)', () => {
    const planted = [
      creds.token,
      `Authorization: Bearer ${creds.token}`,
      Buffer.from(`admin:${creds.password}`).toString('base64'),
      creds.certData,
      creds.keyData,
      Buffer.from(creds.keyData, 'base64').toString('utf8'),
      JSON.stringify({ cert: Buffer.from(`--${creds.certMarker}--`).toString('base64') }),
    ];
    for (const text of planted) expect(leaks(text, creds)).not.toEqual([]);
    expect(leaks('{"msg":"event failed","err":{"kind":"Forbidden"}}', creds)).toEqual([]);
  });

  it('API errors of every kind through the proxy (401, 403, 500, reset, timeout), reads and writes', async () => {
    const logs = captureLogs();
    const tag = 'hygiene-proxy';
    const path = await kubeconfigFile('proxy', {
      server: `${suite.proxy.url}/_tag/${tag}`,
      insecure: true,
    });
    const statuses = await exercise(logs, path, API_ERRORS as never, tag);
    // The errors really happened, and were logged with their kind.
    expect(statuses.filter((s) => s >= 500).length).toBeGreaterThan(10);
    const failed = logs.records.filter((l) => l['msg'] === 'event failed');
    const kinds = new Set(failed.map((l) => (l['err'] as { kind?: string } | undefined)?.kind));
    expect(kinds).toEqual(new Set(['Forbidden', 'Transient']));
    // The token really went out on every request (and was never logged).
    expect(suite.proxy.count({ clientTag: tag })).toBeGreaterThan(50);
    expectClean(logs);
  });

  it('a TLS endpoint that fails the handshake, with marker client certificate and key', async () => {
    const logs = captureLogs();
    const path = await kubeconfigFile('tls', {
      server: suite.proxy.url.replace('http:', 'https:'),
      insecure: true,
    });
    const statuses = await exercise(logs, path, []);
    expect(statuses.filter((s) => s >= 500).length).toBeGreaterThan(0);
    expectClean(logs);
  });

  it.each(['token', 'basic'] as const)(
    'the real API server refusing a marker %s credential (401)',
    async (user) => {
      const logs = captureLogs();
      const cluster = kc.getCurrentCluster();
      const path = await kubeconfigFile(
        `real-${user}`,
        {
          server: cluster?.server ?? '',
          ...(cluster?.caData !== undefined ? { caData: cluster.caData } : {}),
        },
        user,
      );
      const statuses = await exercise(logs, path, []);
      expect(statuses.filter((s) => s >= 500).length).toBeGreaterThan(0);
      expectClean(logs);
    },
  );

  it('a kubeconfig that does not parse: the error names the file, not its contents', async () => {
    const path = join(dir, 'broken.kubeconfig');
    await writeFile(
      path,
      `${markedKubeconfig(creds, { server: 'https://x' })}\n  token: [${creds.token}`,
    );
    let message = '';
    try {
      loadKubeConfig({ kubeconfigPath: path });
    } catch (e) {
      message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    }
    expect(message).toContain(path);
    expect(leaks(message, creds)).toEqual([]);
  });
});
