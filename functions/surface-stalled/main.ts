import { runMain } from '../../shared/runtime/main.js';
import { createApp } from './app.js';

await runMain('surface-stalled', ({ config, logger, kube, clock, isReady }) =>
  createApp({ kube, clock, logger, config }, { isReady }),
);
