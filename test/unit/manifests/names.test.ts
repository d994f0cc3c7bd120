// The alarm and resync names are one setting (issue 12, item 6): the recovery-config ConfigMap in
// knative/base/config.env. Changing only it must carry the new names into the detect-alarm Role
// and the resync PingSource in every install entry point; a mismatch would forbid detect's alarm
// writes. The ping Triggers do not depend on the names (nor on the namespace, docs/adr/0063): they
// match the recoverytimer extension the PingSources set.

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  PING,
  TIMER_ALARM,
  TIMER_EXTENSION,
  TIMER_RESYNC,
} from '../../../shared/core/objects/cloudevent-types.js';
import {
  findObject,
  loadRbacRules,
  objectsOfKind,
  renderKustomize,
  REPO_ROOT,
  type K8sObject,
} from '../../support/manifests.js';
import { FLUX_ONLY, recoveryConfig, WIRED } from './renders.js';

type Filter = Record<string, string | undefined>;
/** Each ping Trigger's filter attributes, by Trigger name. */
const pingTriggers = (objects: readonly K8sObject[]): Record<string, Filter> =>
  Object.fromEntries(
    objectsOfKind(objects, 'Trigger')
      .map((t) => [
        t.metadata.name,
        (t.spec as { filter: { attributes: Filter } }).filter.attributes,
      ])
      .filter(([, f]) => (f as Filter).type === PING),
  );
const timer = (value: string): Filter => ({ type: PING, [TIMER_EXTENSION]: value });
/** The extensions a PingSource adds to its events (spec.ceOverrides). */
const extensionsOf = (o: K8sObject): Record<string, string> | undefined =>
  (o.spec as { ceOverrides?: { extensions?: Record<string, string> } }).ceOverrides?.extensions;

const tmp = mkdtempSync(path.join(os.tmpdir(), 'swr-names-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A copy of knative/ whose ConfigMap alone names the alarm and the resync differently. */
function renamedCopy(alarm: string, resync: string): string {
  const root = path.join(tmp, `${alarm}-${resync}`);
  cpSync(path.join(REPO_ROOT, 'knative'), path.join(root, 'knative'), { recursive: true });
  const config = path.join(root, 'knative', 'base', 'config.env');
  const text = readFileSync(config, 'utf8');
  const changed = text
    .replace(/^(ALARM_NAME=).*$/m, `$1${alarm}`)
    .replace(/^(RESYNC_PINGSOURCE=).*$/m, `$1${resync}`);
  expect(changed).not.toBe(text);
  writeFileSync(config, changed);
  return root;
}

// The off overlay has no PingSource and no Trigger: test/unit/manifests/off.test.ts.
describe.each(WIRED)('%s', (entry) => {
  it('as shipped: every name agrees with the ConfigMap', () => {
    const objects = renderKustomize(entry);
    const data = recoveryConfig(objects);
    expect(pingTriggers(objects)['detect-alarm']).toEqual(timer(TIMER_ALARM));
    expect(pingTriggers(objects)['detect-resync']).toEqual(timer(TIMER_RESYNC));
    const resync = findObject(objects, 'PingSource', data.RESYNC_PINGSOURCE ?? '');
    expect(extensionsOf(resync)).toEqual({ [TIMER_EXTENSION]: TIMER_RESYNC });
  });

  // kustomize renders a fresh copy here (nothing cached): slow on a busy machine.
  it(
    'changing only the ConfigMap renames the alarm and the resync everywhere',
    { timeout: 60_000 },
    () => {
      const root = renamedCopy('follow-up', 'sweep-every-5m');
      const objects = renderKustomize(path.join(root, entry));
      const data = recoveryConfig(objects);
      expect(data.ALARM_NAME).toBe('follow-up');
      expect(data.RESYNC_PINGSOURCE).toBe('sweep-every-5m');

      // The Triggers still hear both: they match the extension, which the renamed PingSource sets.
      const triggers = pingTriggers(objects);
      expect(triggers['detect-alarm']).toEqual(timer(TIMER_ALARM));
      expect(triggers['detect-resync']).toEqual(timer(TIMER_RESYNC));
      if (entry !== FLUX_ONLY) {
        expect(triggers['surface-stalled-resync']).toEqual(timer(TIMER_RESYNC));
      }
      // The resync PingSource carries the new name; none has the old one.
      const pings = objectsOfKind(objects, 'PingSource');
      expect(pings.map((p) => p.metadata.name)).toEqual(['sweep-every-5m']);
      expect(extensionsOf(pings[0] as K8sObject)).toEqual({ [TIMER_EXTENSION]: TIMER_RESYNC });
      // detect may read, move and delete exactly the renamed alarm, and read its renamed owner.
      const named = loadRbacRules('detect', objects).flatMap((r) => r.resourceNames ?? []);
      expect(new Set(named)).toEqual(new Set(['follow-up', 'sweep-every-5m']));
    },
  );
});
