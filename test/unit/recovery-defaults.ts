// The recovery settings an empty environment gives (docs/operations.md documents all
// but the fixed clock-skew allowance): written out here, not taken from the product, so that a
// changed default fails a test.

import type { RecoveryConfig } from '../../shared/core/index.js';

export const DOCUMENTED_RECOVERY_DEFAULTS: RecoveryConfig = {
  gracePeriodMs: 150_000,
  earlyDetection: true,
  backoffInitialMs: 30_000,
  backoffMaxMs: 240_000,
  maxAttempts: 5,
  mode: 'enforce',
  clockSkewMs: 60_000,
};
