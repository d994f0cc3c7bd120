import { runMain } from '../../shared/runtime/main.js';
import { createApp } from './app.js';

await runMain('force-drift', ({ config, logger, kube, clock, isReady, metrics, senderAuth }) =>
  createApp({ kube, clock, logger, config, metrics }, { isReady, senderAuth }),
);
