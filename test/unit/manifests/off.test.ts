// knative/overlays/off (issue 35, docs/adr/0067): the install present but doing nothing. Every
// object of the full install is there, except the ones that start work: the event sources and the
// Triggers; and RECOVERY_MODE is off (its hashed recovery-config in every Service's template), so a function still
// reached arms and forces nothing. Without its owner (the resync PingSource) the run-time alarm
// goes to the garbage collector. docs/operations.md's command that turns a running install off
// deletes exactly the kinds the overlay leaves out.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  findRecoveryConfig,
  objectsOfKind,
  REPO_ROOT,
  renderKustomize,
  type K8sObject,
} from '../../support/manifests.js';
import { base, BASE, OFF, recoveryConfig } from './renders.js';

/** The kinds that make work: each starts deliveries (sources) or routes them (Triggers). */
const LEFT_OUT = ['ApiServerSource', 'PingSource', 'Trigger'];
/** Every kind that could put an event on the Broker or deliver one to a function. */
const DELIVERING = [...LEFT_OUT, 'ContainerSource', 'Subscription', 'Channel', 'Parallel'];

const knativeServices = (objects: readonly K8sObject[]): K8sObject[] =>
  objectsOfKind(objects, 'Service').filter((s) => s.apiVersion.startsWith('serving.knative.dev/'));
const templateAnnotations = (s: K8sObject): Record<string, string> =>
  (s.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata
    .annotations;
/** The ConfigMaps a Service's container reads (envFrom). */
const envFromConfigMaps = (s: K8sObject): string[] =>
  (
    s.spec as {
      template: { spec: { containers: { envFrom?: { configMapRef?: { name: string } }[] }[] } };
    }
  ).template.spec.containers.flatMap((c) =>
    (c.envFrom ?? []).flatMap((e) => (e.configMapRef ? [e.configMapRef.name] : [])),
  );

/** `o` with the mode put back to `mode` (in the ConfigMap). */
function withMode(o: K8sObject, mode: string): K8sObject {
  const copy = structuredClone(o);
  if (copy.kind === 'ConfigMap' && copy.metadata.name === 'recovery-config') {
    (copy.data as Record<string, string>).RECOVERY_MODE = mode;
  }
  return copy;
}

/**
 * `o` with recovery-config's content-hashed name (docs/adr/0064) put back to the base name, in the
 * ConfigMap and in every reference to it: the mode changes the content, hence the hash.
 */
const unhashed = (o: K8sObject): K8sObject =>
  JSON.parse(
    JSON.stringify(o).replace(/recovery-config-[a-z0-9]{10}(?![a-z0-9-])/g, 'recovery-config'),
  ) as K8sObject;

const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const byKey = (objects: readonly K8sObject[]) => new Map(objects.map((o) => [key(o), o]));

/** The kinds of the `kubectl delete` in docs/operations.md "Turning it off", as kubectl plurals. */
function documentedDeleteKinds(): string[] {
  const text = readFileSync(path.join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
  const line = text.split('\n').find((l) => /kubectl .*delete [a-z,]+ -l /.test(l));
  const kinds = line?.match(/delete ([a-z,]+) -l /)?.[1];
  if (kinds === undefined)
    throw new Error('docs/operations.md: no `kubectl … delete KINDS -l` line');
  return kinds.split(',').sort();
}

describe('knative/overlays/off', () => {
  const off = renderKustomize(OFF);
  const offUnhashed = off.map(unhashed);

  it('has no object that starts or routes an event', () => {
    for (const kind of DELIVERING) expect(objectsOfKind(off, kind), kind).toEqual([]);
  });

  it('keeps every other object of the full install, unchanged but for the mode', () => {
    const full = byKey(base().map(unhashed));
    const kept = [...full.values()].filter((o) => !LEFT_OUT.includes(o.kind));
    expect([...byKey(offUnhashed).keys()].sort()).toEqual(kept.map(key).sort());
    for (const o of offUnhashed) expect(withMode(o, 'enforce'), key(o)).toEqual(full.get(key(o)));
  });

  it('is RECOVERY_MODE=off, rolled into every Service by the hashed recovery-config it names', () => {
    expect(recoveryConfig(off).RECOVERY_MODE).toBe('off');
    expect(recoveryConfig(base()).RECOVERY_MODE).toBe('enforce');
    const offName = findRecoveryConfig(off).metadata.name;
    expect(offName).not.toBe(findRecoveryConfig(base()).metadata.name);
    const services = knativeServices(off);
    expect(services.length).toBeGreaterThanOrEqual(5);
    for (const s of services) expect(envFromConfigMaps(s), s.metadata.name).toEqual([offName]);
  });

  it("leaves out the alarm's owner, so the garbage collector removes the alarm", () => {
    const owner = recoveryConfig(off).RESYNC_PINGSOURCE ?? '';
    expect(owner).not.toBe('');
    expect(objectsOfKind(renderKustomize(BASE), 'PingSource').map((p) => p.metadata.name)).toEqual([
      owner,
    ]);
    expect(objectsOfKind(off, 'PingSource')).toEqual([]);
  });

  it('runs no pod while idle: every Service scales to zero', () => {
    expect(knativeServices(off)).toHaveLength(5);
    for (const s of knativeServices(off)) {
      expect(templateAnnotations(s)['autoscaling.knative.dev/min-scale'], s.metadata.name).toBe(
        '0',
      );
    }
  });

  it('docs/operations.md turns a running install off by deleting exactly the kinds left out', () => {
    const plural: Record<string, string> = {
      ApiServerSource: 'apiserversources',
      PingSource: 'pingsources',
      Trigger: 'triggers',
    };
    expect(documentedDeleteKinds()).toEqual(LEFT_OUT.map((k) => plural[k]).sort());
  });
});
