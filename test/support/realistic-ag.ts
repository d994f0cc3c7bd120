// The realistic AG fixture (test/support/fixtures/realistic-ag.json): an ArtifactGenerator as
// source-watcher leaves it, ~8 KB with managedFields, Ready=True, eleven inventory entries, no
// tracking. The benches send it; ag-states.ts and raw-kube.ts take their realistic shapes from it.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ArtifactGenerator } from '../../shared/core/objects/types.js';

export const REALISTIC_AG_PATH = join(import.meta.dirname, 'fixtures', 'realistic-ag.json');

/** A fresh copy of the realistic AG. */
export function loadRealisticAg(): ArtifactGenerator & { metadata: Record<string, unknown> } {
  return JSON.parse(readFileSync(REALISTIC_AG_PATH, 'utf8')) as ArtifactGenerator & {
    metadata: Record<string, unknown>;
  };
}
