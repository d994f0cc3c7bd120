// The PromQL that the e2e check (test/e2e/metrics-promql.test.ts) evaluates against the real
// Prometheus room; the check fails unless it evaluates every one. The dashboard
// (knative/components/monitoring/dashboard.json) uses only these and the alert rules' expressions
// (which promtool tests): test/unit/monitoring checks it.
// `$name` is the dashboard's AG variable; the e2e check puts an AG's name in its place.

export const E2E_QUERIES = {
  stallsOfAg: 'sum by (how) (source_watcher_recovery_stalls_total{name="$name"})',
  forcesOfAg: 'sum by (attempt) (source_watcher_recovery_forces_total{name="$name"})',
  recoveriesOfAg: 'sum(source_watcher_recovery_recoveries_total{name="$name"})',
  verdictsOfAg: 'sum(source_watcher_recovery_verdicts_total{name="$name"})',
  deliveriesByFunction: 'sum by (function, outcome) (source_watcher_recovery_deliveries_total)',
  stallDurationsByOutcome:
    'sum by (outcome) (source_watcher_recovery_stall_duration_seconds_count)',
  lostWriteToForceBuckets:
    'sum by (le) (source_watcher_recovery_lost_write_to_force_duration_seconds_bucket)',
  refusalsByReason: 'sum by (function, reason) (source_watcher_recovery_refusals_total)',
  deadLettered: 'sum(source_watcher_recovery_deliveries_total{outcome="dead-letter"})',
} as const;

export type E2eQuery = keyof typeof E2E_QUERIES;
