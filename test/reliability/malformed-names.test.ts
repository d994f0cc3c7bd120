// AG event data whose metadata.name or metadata.namespace is not a Kubernetes name is malformed
// input: 400 (dead-letter), no API call, nothing emitted. Found by the fuzz suites.

import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { APISERVER_UPDATE } from '../../shared/core/index.js';
import {
  AG_API_VERSION,
  AG_KIND,
  type ArtifactGenerator,
} from '../../shared/core/objects/types.js';
import { uniqueName } from '../support/apiserver.js';
import { DIGEST, INVENTORY } from '../support/ag-states.js';
import { cloudEvent, postEvent, type Started } from '../support/http-events.js';
import { SettableClock } from '../harness/functions.js';
import { functionFile } from './support/function-file.js';
import { progressing } from '../support/conditions.js';

const { T0, suite } = functionFile('names', 'rel-names', 'nothing');
let detect: Started;
let surfaceStalled: Started;

beforeAll(async () => {
  const opts = { env: { ALARM_NAME: uniqueName('names') } };
  detect = await suite.startDetect(new SettableClock(T0), opts);
  surfaceStalled = await suite.startSurfaceStalled(new SettableClock(T0), opts);
});
beforeEach(() => {
  suite.sink.events.length = 0;
  suite.proxy.clearCalls();
});

/** A stuck AG (it would be forced) with the given name and namespace. */
function stuckAg(namespace: string, name: string): ArtifactGenerator {
  return {
    apiVersion: AG_API_VERSION,
    kind: AG_KIND,
    metadata: { name, namespace, generation: 1, resourceVersion: '3', uid: 'u' },
    status: {
      inventory: INVENTORY,
      observedSourcesDigest: DIGEST,
      conditions: [progressing(T0 - 60_000)],
    },
  };
}

const CASES: [string, string, string][] = [
  ['an upper-case name', 'cozy-system', 'Not_A_Name'],
  ['a name with a slash', 'cozy-system', 'a/b'],
  ['a namespace with a slash', 'a/b', 'x'],
  ['a name of 254 characters', 'cozy-system', 'n'.repeat(254)],
  ['a namespace with a NUL', 'a\u0000b', 'x'],
];

const updateEvent = (data: ArtifactGenerator) =>
  cloudEvent({
    type: APISERVER_UPDATE,
    source: 'https://10.96.0.1:443',
    data,
    extensions: { kind: AG_KIND, apiversion: AG_API_VERSION },
  });

describe('AG events with names that are not Kubernetes names', () => {
  it.each(CASES)('detect: %s -> 400, nothing emitted', async (_what, namespace, name) => {
    const answer = await postEvent(detect.url, updateEvent(stuckAg(namespace, name)));
    expect({ status: answer.status, emitted: suite.sink.events.map((e) => e.type) }).toEqual({
      status: 400,
      emitted: [],
    });
  });

  it.each(CASES)('surface-stalled: %s -> 400, no API call', async (_what, namespace, name) => {
    const answer = await postEvent(surfaceStalled.url, updateEvent(stuckAg(namespace, name)));
    expect({
      status: answer.status,
      apiCalls: suite.proxy.count({ clientTag: 'surface-stalled' }),
    }).toEqual({
      status: 400,
      apiCalls: 0,
    });
  });
});
