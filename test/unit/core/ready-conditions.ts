// The Ready conditions source-watcher writes (and the recovery's own marker), at a given time and
// generation, for the core unit tests.

import { formatTimeSeconds, type Condition } from '../../../shared/core/index.js';

const ready =
  (status: string, reason: string, message: string) =>
  (at: number, generation = 1): Condition => ({
    type: 'Ready',
    status,
    reason,
    message,
    lastTransitionTime: formatTimeSeconds(at),
    observedGeneration: generation,
  });

export const progressing = ready('Unknown', 'Progressing', 'Reconciliation in progress');
export const succeeded = ready(
  'True',
  'Succeeded',
  'reconciliation succeeded, generated 1 artifact(s)',
);
export const buildFailed = ready('False', 'BuildFailed', 'build failed: copy: no such file');
export const marker = ready(
  'False',
  'SourceWatcherRecoveryForced',
  'forced by source-watcher-recovery',
);
