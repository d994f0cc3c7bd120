// Vitest globalSetup for the projects whose suites run Prometheus or promtool (unit: the alert
// rules' tests; e2e and reliability: the metrics suites): builds them from the Go module by
// test/prometheus/build.sh (a no-op when up to date; about 10 minutes on a fresh machine), once
// per process (build-once.ts).

import { buildOnce, buildScript } from './build-once.js';

export const PROMETHEUS_BUILD_SCRIPT = buildScript('prometheus');

export default buildOnce('Prometheus', PROMETHEUS_BUILD_SCRIPT);
