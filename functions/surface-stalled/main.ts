import { runMain } from '../../shared/runtime/main.js';
import { createApp } from './app.js';
import { createSyncTurns } from './sync-turns.js';

await runMain('surface-stalled', ({ config, logger, kube, clock, isReady, metrics, senderAuth }) =>
  createApp(
    { kube, clock, logger, config, metrics, turns: createSyncTurns() },
    { isReady, senderAuth },
  ),
);
