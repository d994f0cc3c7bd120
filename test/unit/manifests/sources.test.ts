// The event plumbing in knative/: Namespace, Broker, ApiServerSource, the resync PingSource, the
// SinkBinding, and the ConfigMap the functions read.

import { describe, expect, it } from 'vitest';
import { AG_API_VERSION, AG_KIND } from '../../../shared/core/objects/types.js';
import {
  ALARM_LABELS,
  PART_OF,
  PART_OF_LABEL,
} from '../../../shared/core/follow-up/alarm-owner.js';
import {
  RECOVERY_NAMESPACE,
  findObject,
  loadRbacRules,
  objectsOfKind,
  renderKustomize,
  ruleAllows,
} from '../../support/manifests.js';
import { BASE, base, OFF, recoveryConfig, RENDERS, WIRED } from './renders.js';

const spec = (kind: string, name: string, render = BASE): Record<string, unknown> =>
  findObject(renderKustomize(render), kind, name).spec as Record<string, unknown>;
const BROKER_REF = { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' };
const DEAD_LETTER_REF = {
  apiVersion: 'serving.knative.dev/v1',
  kind: 'Service',
  name: 'dead-letter',
};

/** The access check Knative runs for the ApiServerSource: get, list and watch in each namespace. */
function expectWatchAllowed(group: string, resource: string, namespaces: string[]): void {
  const rules = loadRbacRules('apiserversource', base());
  for (const verb of ['get', 'list', 'watch']) {
    for (const namespace of namespaces) {
      const request = { verb, group, resource, namespace };
      expect(ruleAllows(rules, request), `${verb} in "${namespace}"`).toBe(true);
    }
  }
}

const CONFIG: Record<string, string> = {
  RECOVERY_EARLY_DETECTION: 'on',
  RECOVERY_GRACE_PERIOD: '2m30s',
  RECOVERY_BACKOFF_INITIAL: '30s',
  RECOVERY_BACKOFF_MAX: '4m',
  RECOVERY_MAX_ATTEMPTS: '5',
  RECOVERY_MODE: 'enforce',
  RECOVERY_HEAL_EXTERNAL_ARTIFACTS: 'on',
  RECOVERY_PACKAGESOURCE_AG_NAMESPACES: 'cozy-system',
  RECOVERY_AUTH: 'off',
  LOG_LEVEL: 'info',
  ALARM_NAME: 'recovery-alarm',
  ALARM_SINK_BROKER: 'default',
  RESYNC_PINGSOURCE: 'resync',
};

describe('namespace and Broker', () => {
  it('the namespace lets the SinkBinding webhook in (inclusion mode)', () => {
    const ns = findObject(base(), 'Namespace', RECOVERY_NAMESPACE);
    expect(ns.metadata.labels?.['bindings.knative.dev/include']).toBe('true');
  });

  it('Broker `default` dead-letters to the dead-letter Service', () => {
    const delivery = spec('Broker', 'default').delivery as Record<string, unknown>;
    expect(delivery.deadLetterSink).toEqual({ ref: DEAD_LETTER_REF });
    expect(delivery.backoffPolicy).toBe('exponential');
  });
});

describe('ApiServerSource', () => {
  it('sends whole ArtifactGenerators from all namespaces to the Broker', () => {
    const s = spec('ApiServerSource', 'artifactgenerators');
    expect(s.mode).toBe('Resource');
    expect(s.resources).toEqual([{ apiVersion: AG_API_VERSION, kind: AG_KIND }]);
    // An empty selector is "all namespaces"; an absent one would be "only this namespace".
    expect(s.namespaceSelector).toEqual({});
    expect(s.sink).toEqual({ ref: BROKER_REF });
    expect(s.serviceAccountName).toBe('apiserversource');
  });

  it('its ServiceAccount passes the access check Knative runs (get, list, watch everywhere)', () => {
    findObject(base(), 'ServiceAccount', 'apiserversource');
    const namespaces = ['', 'cozy-system', 'flux-system'];
    expectWatchAllowed('source.extensions.fluxcd.io', 'artifactgenerators', namespaces);
  });
});

describe('ApiServerSource on ExternalArtifacts (functions/heal-external-artifacts)', () => {
  it('sends whole ExternalArtifacts from all namespaces to the Broker', () => {
    const s = spec('ApiServerSource', 'externalartifacts');
    expect(s.mode).toBe('Resource');
    expect(s.resources).toEqual([
      { apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'ExternalArtifact' },
    ]);
    expect(s.namespaceSelector).toEqual({});
    expect(s.sink).toEqual({ ref: BROKER_REF });
    expect(s.serviceAccountName).toBe('apiserversource');
  });

  it('its ServiceAccount passes the access check Knative runs on ExternalArtifacts', () => {
    expectWatchAllowed('source.toolkit.fluxcd.io', 'externalartifacts', ['', 'cozy-system']);
  });
});

describe('resync PingSource', () => {
  it('fires every 5 minutes (UTC) with {"purpose":"resync"} into the Broker', () => {
    const s = spec('PingSource', 'resync');
    expect(s).toMatchObject({
      schedule: '*/5 * * * *',
      timezone: 'UTC',
      contentType: 'application/json',
      sink: { ref: BROKER_REF },
    });
    expect(JSON.parse(String(s.data))).toEqual({ purpose: 'resync' });
  });

  it.each(WIRED)('%s: the alarm PingSource is not shipped (detect owns it at runtime)', (r) => {
    expect(objectsOfKind(renderKustomize(r), 'PingSource').map((p) => p.metadata.name)).toEqual([
      'resync',
    ]);
  });
});

describe('SinkBinding', () => {
  it('gives the detect Service K_SINK = the Broker', () => {
    const s = spec('SinkBinding', 'detect');
    expect(s.subject).toEqual({
      apiVersion: 'serving.knative.dev/v1',
      kind: 'Service',
      name: 'detect',
    });
    expect(s.sink).toEqual({ ref: BROKER_REF });
    findObject(base(), 'Service', 'detect', 'serving.knative.dev');
  });
});

describe('recovery-config', () => {
  it('holds exactly the documented keys and defaults', () => {
    expect(recoveryConfig(base())).toEqual(CONFIG);
  });

  it.each(RENDERS)('%s: names objects that exist in the render', (render) => {
    const objects = renderKustomize(render);
    const data = recoveryConfig(objects);
    findObject(objects, 'Broker', data.ALARM_SINK_BROKER ?? '');
    // The off overlay has no resync PingSource (test/unit/manifests/off.test.ts).
    if (render !== OFF) findObject(objects, 'PingSource', data.RESYNC_PINGSOURCE ?? '');
  });

  it.each(RENDERS)(
    "%s: the Broker address is only the SinkBinding's (K_SINK): no BROKER_URL to fall out of step",
    (render) => {
      const objects = renderKustomize(render);
      const data = recoveryConfig(objects);
      const binding = findObject(objects, 'SinkBinding', 'detect');
      const sink = (binding.spec as { sink: { ref: { name: string; namespace?: string } } }).sink
        .ref;
      expect(data.BROKER_URL).toBeUndefined();
      expect(sink).toEqual({
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Broker',
        name: data.ALARM_SINK_BROKER,
      });
    },
  );
});

describe('the run-time alarm is labelled as part of the install (docs/adr/0067)', () => {
  it.each(RENDERS)('%s: every object carries the part-of label detect gives the alarm', (r) => {
    expect(ALARM_LABELS[PART_OF_LABEL]).toBe(PART_OF);
    const unlabelled = renderKustomize(r)
      .filter((o) => o.metadata.labels?.[PART_OF_LABEL] !== PART_OF)
      .map((o) => `${o.kind}/${o.metadata.name}`);
    expect(unlabelled).toEqual([]);
  });
});
