// Vitest globalSetup for the unit project (the chart tests run a real Helm): builds it from the
// Go module by test/helm/build.sh (a no-op when up to date; about 2-3 minutes on 2 cores on a
// fresh machine), once per process (build-once.ts).

import { buildOnce, buildScript } from './build-once.js';

export const HELM_BUILD_SCRIPT = buildScript('helm');

export default buildOnce('Helm', HELM_BUILD_SCRIPT);
