// The alarm and resync names are one setting (issue 12, item 6): the recovery-config ConfigMap in
// knative/core/config.yaml. Changing only it must carry the new names into the Trigger filters,
// the detect-alarm Role and the resync PingSource in every install entry point; a mismatch would
// silently drop follow-ups (pings routed nowhere) or forbid detect's alarm writes.

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PING } from '../../../shared/core/events.js';
import {
  findObject,
  loadRbacRules,
  objectsOfKind,
  renderKustomize,
  RECOVERY_NAMESPACE,
  REPO_ROOT,
  type K8sObject,
} from '../../support/manifests.js';
import { FLUX_ONLY, RENDERS } from './renders.js';

const pingSource = (name: string): string =>
  `/apis/v1/namespaces/${RECOVERY_NAMESPACE}/pingsources/${name}`;

interface Filter {
  type?: string;
  source?: string;
}
const pingTriggers = (objects: readonly K8sObject[]): Record<string, string> =>
  Object.fromEntries(
    objectsOfKind(objects, 'Trigger')
      .map((t) => [
        t.metadata.name,
        (t.spec as { filter: { attributes: Filter } }).filter.attributes,
      ])
      .filter(([, f]) => (f as Filter).type === PING)
      .map(([name, f]) => [name, (f as Filter).source ?? '']),
  );

const tmp = mkdtempSync(path.join(os.tmpdir(), 'swr-names-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A copy of knative/ whose ConfigMap alone names the alarm and the resync differently. */
function renamedCopy(alarm: string, resync: string): string {
  const root = path.join(tmp, `${alarm}-${resync}`);
  cpSync(path.join(REPO_ROOT, 'knative'), path.join(root, 'knative'), { recursive: true });
  const config = path.join(root, 'knative', 'core', 'config.yaml');
  const text = readFileSync(config, 'utf8');
  const changed = text
    .replace(/^( {2}ALARM_NAME:).*$/m, `$1 ${alarm}`)
    .replace(/^( {2}RESYNC_PINGSOURCE:).*$/m, `$1 ${resync}`);
  expect(changed).not.toBe(text);
  writeFileSync(config, changed);
  return root;
}

describe.each(RENDERS)('%s', (entry) => {
  it('as shipped: every name agrees with the ConfigMap', () => {
    const objects = renderKustomize(entry);
    const data = findObject(objects, 'ConfigMap', 'recovery-config').data as Record<string, string>;
    expect(data.ALARM_NAMESPACE).toBe(RECOVERY_NAMESPACE);
    expect(pingTriggers(objects)['detect-alarm']).toBe(pingSource(data.ALARM_NAME ?? ''));
    expect(pingTriggers(objects)['detect-resync']).toBe(pingSource(data.RESYNC_PINGSOURCE ?? ''));
    findObject(objects, 'PingSource', data.RESYNC_PINGSOURCE ?? '');
  });

  // kustomize renders a fresh copy here (nothing cached): slow on a busy machine.
  it(
    'changing only the ConfigMap renames the alarm and the resync everywhere',
    { timeout: 60_000 },
    () => {
      const root = renamedCopy('follow-up', 'sweep-every-5m');
      const objects = renderKustomize(path.join(root, entry));
      const data = findObject(objects, 'ConfigMap', 'recovery-config').data as Record<
        string,
        string
      >;
      expect(data.ALARM_NAME).toBe('follow-up');
      expect(data.RESYNC_PINGSOURCE).toBe('sweep-every-5m');

      const triggers = pingTriggers(objects);
      expect(triggers['detect-alarm']).toBe(pingSource('follow-up'));
      expect(triggers['detect-resync']).toBe(pingSource('sweep-every-5m'));
      if (entry !== FLUX_ONLY) {
        expect(triggers['surface-stalled-resync']).toBe(pingSource('sweep-every-5m'));
      }
      // No Trigger still listens to an old name.
      for (const source of Object.values(triggers)) {
        expect(source).not.toMatch(/\/(recovery-alarm|resync)$/);
      }
      // The resync PingSource carries the new name; none has the old one.
      const pings = objectsOfKind(objects, 'PingSource').map((p) => p.metadata.name);
      expect(pings).toEqual(['sweep-every-5m']);
      // detect may read, move and delete exactly the renamed alarm.
      const named = loadRbacRules('detect', objects).flatMap((r) => r.resourceNames ?? []);
      expect(new Set(named)).toEqual(new Set(['follow-up']));
    },
  );
});

describe('ALARM_NAMESPACE', () => {
  it(
    'is derived from the install namespace: an edit of it in the ConfigMap cannot diverge',
    { timeout: 60_000 },
    () => {
      const root = path.join(tmp, 'namespace');
      cpSync(path.join(REPO_ROOT, 'knative'), path.join(root, 'knative'), { recursive: true });
      const config = path.join(root, 'knative', 'core', 'config.yaml');
      writeFileSync(
        config,
        readFileSync(config, 'utf8').replace(/^( {2}ALARM_NAMESPACE:).*$/m, '$1 elsewhere'),
      );
      const objects = renderKustomize(path.join(root, 'knative'));
      const data = findObject(objects, 'ConfigMap', 'recovery-config').data as Record<
        string,
        string
      >;
      expect(data.ALARM_NAMESPACE).toBe(RECOVERY_NAMESPACE);
      expect(pingTriggers(objects)['detect-alarm']).toBe(pingSource('recovery-alarm'));
    },
  );
});
