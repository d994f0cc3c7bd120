// The prerequisite table and its Event (shared/core/access/prerequisites.ts): which APIs each function
// needs, as the CRD names an operator checks with `kubectl get crd`, and the Warning Event.

import { describe, expect, it } from 'vitest';
import {
  API_NEEDS,
  describeNeed,
  prerequisiteEvent,
  reportOf,
} from '../../../shared/core/access/prerequisites.js';
import { isDns1123Subdomain } from '../../../shared/core/codecs/names.js';

const AG = 'artifactgenerators.source.extensions.fluxcd.io/v1beta1 (ArtifactGenerator)';

describe('what each function needs (issue 35)', () => {
  it.each([
    ['detect', [AG, 'pingsources.sources.knative.dev/v1 (PingSource)']],
    ['force-drift', [AG]],
    ['surface-stalled', [AG, 'packagesources.cozystack.io/v1alpha1 (PackageSource)']],
    [
      'heal-external-artifacts',
      [AG, 'externalartifacts.source.toolkit.fluxcd.io/v1 (ExternalArtifact)'],
    ],
    ['dead-letter', []],
  ])('%s', (fn, needs) => {
    expect((API_NEEDS[fn] ?? []).map(describeNeed)).toEqual(needs);
  });
});

describe('reportOf', () => {
  it('sorts each need by what discovery said', () => {
    const [ag, ping] = API_NEEDS['detect'] ?? [];
    if (ag === undefined || ping === undefined) throw new Error('detect needs two APIs');
    expect(
      reportOf([
        [ag, 'served'],
        [ping, 'missing'],
      ]),
    ).toEqual({ served: [AG], missing: [describeNeed(ping)], unknown: [] });
    expect(reportOf([[ag, 'unknown']])).toEqual({ served: [], missing: [], unknown: [AG] });
  });
});

describe('prerequisiteEvent', () => {
  const at = Date.UTC(2026, 11, 2, 14, 0, 0);
  const missing = ['packagesources.cozystack.io/v1alpha1 (PackageSource)'];

  it('a Warning regarding the function Service, named by function and missing list', () => {
    const e = prerequisiteEvent('surface-stalled', 'cozy-swr', missing, 'pod-1', at);
    expect(e).toMatchObject({
      type: 'Warning',
      reason: 'PrerequisiteMissing',
      action: 'CheckPrerequisites',
      metadata: { namespace: 'cozy-swr' },
      regarding: {
        apiVersion: 'serving.knative.dev/v1',
        kind: 'Service',
        name: 'surface-stalled',
        namespace: 'cozy-swr',
      },
      eventTime: '2026-12-02T14:00:00.000000Z',
    });
    expect(e.note).toContain(missing[0]);
    expect(isDns1123Subdomain(e.metadata.name)).toBe(true);
  });

  it.each([
    ['another replica, later', 'pod-2', at + 60_000, true],
    ['another function', 'pod-1', at, false],
  ])('%s: same name %s', (_n, instance, now, same) => {
    const first = prerequisiteEvent('surface-stalled', 'ns', missing, 'pod-1', at);
    const fn = same ? 'surface-stalled' : 'heal-external-artifacts';
    const other = prerequisiteEvent(fn, 'ns', missing, instance, now);
    expect(other.metadata.name === first.metadata.name).toBe(same);
  });
});
