import { runMain } from '../../shared/runtime/main.js';
import { createApp } from './app.js';

await runMain('force-drift', ({ config, logger, kube, clock, isReady, senderAuth }) =>
  createApp({ kube, clock, logger, config }, { isReady, senderAuth }),
);
