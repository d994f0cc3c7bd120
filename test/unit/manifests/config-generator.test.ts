// recovery-config is generated with a hash of its content in its name (knative/base, ADR 64):
// every Service of every render reads it by that name, so a change of one value is a change of
// every Service's template, which Knative makes a new Revision of.

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  RECOVERY_CONFIG_LABEL,
  findRecoveryConfig,
  objectsOfKind,
  renderKustomize,
  type K8sObject,
} from '../../support/manifests.js';
import { RENDERS } from './renders.js';

const EVERY_RENDER = [
  ...RENDERS,
  'knative/overlays/scoped',
  'knative/overlays/sender-auth',
  'test/relocated',
];

type ServiceSpec = {
  template: { spec: { containers: { envFrom?: { configMapRef?: { name?: string } }[] }[] } };
};
const configOf = (service: K8sObject): (string | undefined)[] =>
  (service.spec as ServiceSpec).template.spec.containers.flatMap((c) =>
    (c.envFrom ?? []).map((e) => e.configMapRef?.name),
  );

const tmp = mkdtempSync(path.join(os.tmpdir(), 'swr-config-gen-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe.each(EVERY_RENDER)('%s', (render) => {
  it('has one recovery-config, named with its hash and labelled for its policy', () => {
    const objects = renderKustomize(render);
    const config = findRecoveryConfig(objects);
    expect(config.metadata.name).toMatch(/^recovery-config-[a-z0-9]{10}$/);
    expect(config.metadata.labels?.[RECOVERY_CONFIG_LABEL]).toBe('recovery');
    const services = objectsOfKind(objects, 'Service');
    expect(services.length).toBeGreaterThanOrEqual(3);
    for (const s of services) expect(configOf(s), s.metadata.name).toEqual([config.metadata.name]);
  });
});

describe('a changed value', () => {
  it('renames recovery-config and changes every Service template that reads it', () => {
    const root = path.join(tmp, 'changed');
    cpSync(path.join(REPO_ROOT, 'knative'), path.join(root, 'knative'), { recursive: true });
    const env = path.join(root, 'knative', 'base', 'config.env');
    const text = readFileSync(env, 'utf8');
    const changed = text.replace(/^RECOVERY_GRACE_PERIOD=.*$/m, 'RECOVERY_GRACE_PERIOD=3m');
    expect(changed).not.toBe(text);
    writeFileSync(env, changed);
    const before = renderKustomize('knative');
    const after = renderKustomize(path.join(root, 'knative'));
    const oldName = findRecoveryConfig(before).metadata.name;
    const newName = findRecoveryConfig(after).metadata.name;
    expect(newName).not.toBe(oldName);
    const services = objectsOfKind(after, 'Service');
    expect(services.map((s) => s.metadata.name).sort()).toEqual(
      objectsOfKind(before, 'Service')
        .map((s) => s.metadata.name)
        .sort(),
    );
    for (const s of services) expect(configOf(s), s.metadata.name).toEqual([newName]);
  });
});
