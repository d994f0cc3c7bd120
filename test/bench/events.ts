// The event the throughput, cold-start and memory rows send: an ApiServerSource Resource-mode
// update in binary mode, as Knative sends it, carrying the realistic AG fixture.

import type { ArtifactGenerator } from '../../shared/core/objects/types.js';
import { APISERVER_UPDATE } from '../../shared/core/objects/cloudevent-types.js';
import { loadRealisticAg } from '../support/realistic-ag.js';

/** Binary-mode headers of an ApiServerSource Resource-mode update for `ag`. */
export function agUpdateHeaders(
  ag: ArtifactGenerator,
  id = 'b3c1e0f2-5d4a-4c7e-9f8b-0a1b2c3d4e5f',
): Record<string, string> {
  const ns = ag.metadata?.namespace ?? '';
  const name = ag.metadata?.name ?? '';
  return {
    'content-type': 'application/json',
    'ce-specversion': '1.0',
    'ce-id': id,
    'ce-type': APISERVER_UPDATE,
    'ce-source': 'https://10.96.0.1:443',
    'ce-subject': `/apis/source.extensions.fluxcd.io/v1beta1/namespaces/${ns}/artifactgenerators/${name}`,
    'ce-time': '2026-11-29T09:40:33.512Z',
    'ce-kind': 'ArtifactGenerator',
    'ce-apiversion': 'source.extensions.fluxcd.io/v1beta1',
    'ce-name': name,
    'ce-namespace': ns,
  };
}

/** The realistic AG's update event: its body and binary-mode headers. */
export function realisticUpdate(): { body: string; headers: Record<string, string> } {
  const ag = loadRealisticAg();
  return { body: JSON.stringify(ag), headers: agUpdateHeaders(ag) };
}
