// Vitest globalSetup for the unit project's Knative webhook test
// (test/unit/manifests/knative-webhook.test.ts): builds knative-validate, Knative Serving's own
// SetDefaults and Validate, from its Go module by test/knative-validate/build.sh (a no-op when up
// to date; under a minute on 2 cores with Go's caches warm), once per process (build-once.ts).

import { buildOnce, buildScript } from './build-once.js';

export const KNATIVE_VALIDATE_BUILD_SCRIPT = buildScript('knative-validate');

export default buildOnce('knative-validate', KNATIVE_VALIDATE_BUILD_SCRIPT);
