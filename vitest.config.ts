import { defineConfig } from 'vitest/config';

// Projects: unit (pure, fast), integration and e2e (need the real test API server, started by
// the global setup). `npm test` runs them all; CI runs `npm test`.
export default defineConfig({
  test: {
    // In CI, also write a JSON report; .ci/run prints its plain "N passed, N failed" line.
    reporters: process.env['CI']
      ? ['default', ['json', { outputFile: '.cache/vitest-results.json' }]]
      : ['default'],
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: ['test/unit/**/*.test.ts'],
          // The alert rules' tests run promtool, the chart tests helm, the Knative webhook test
          // knative-validate (each built from its Go module on first use).
          globalSetup: [
            'test/setup/prometheus-global-setup.ts',
            'test/setup/helm-global-setup.ts',
            'test/setup/knative-validate-global-setup.ts',
          ],
          hookTimeout: 1_800_000,
        },
      },
      {
        test: {
          name: 'integration',
          // Suites that share the one API server run one project after another.
          sequence: { groupOrder: 1 },
          include: ['test/integration/**/*.test.ts'],
          // manifests-dry-run also sends the Helm chart's renders.
          globalSetup: ['test/setup/apiserver-global-setup.ts', 'test/setup/helm-global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          // Suites that share the one API server run one project after another.
          sequence: { groupOrder: 2 },
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: [
            'test/setup/apiserver-global-setup.ts',
            'test/setup/prometheus-global-setup.ts',
          ],
          testTimeout: 180_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'reliability',
          // Suites that share the one API server run one project after another.
          sequence: { groupOrder: 3 },
          include: ['test/reliability/**/*.test.ts'],
          globalSetup: [
            'test/setup/apiserver-global-setup.ts',
            'test/setup/prometheus-global-setup.ts',
          ],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
