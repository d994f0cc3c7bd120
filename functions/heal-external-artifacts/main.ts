import { runMain } from '../../shared/runtime/main.js';
import { createApp } from './app.js';

await runMain(
  'heal-external-artifacts',
  ({ config, logger, kube, externalArtifacts, clock, isReady, metrics, senderAuth }) =>
    createApp({ kube, externalArtifacts, clock, logger, config, metrics }, { isReady, senderAuth }),
);
