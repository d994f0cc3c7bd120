// Operators learn when early detection is degraded: one warn line per process and cause, debug
// lines after that (a storm must not flood the logs). The force's Event says the same for each
// stall that the time rule had to catch (shared/core/kube-events/content.ts).

import type { HistoryReading } from './ag-history.js';
import { errorSummary } from '../runtime/function-app.js';
import type { Logger } from '../runtime/logger.js';
import type { Metrics } from '../runtime/metrics.js';
import { createWarnOnce } from '../runtime/warn-once.js';

export interface HistoryNotices {
  /** Logs a reading's gap: warn the first time this process sees its cause, debug afterwards. */
  reportGap(reading: HistoryReading, log: Logger): void;
}

export function createHistoryNotices(metrics?: Metrics): HistoryNotices {
  const warnOnce = createWarnOnce();
  return {
    reportGap(reading, log) {
      const gap = reading.gap;
      if (gap === undefined) return;
      metrics?.earlyDetectionDegraded(gap);
      warnOnce(
        gap,
        log,
        { gap, ...(reading.error !== undefined ? { err: errorSummary(reading.error) } : {}) },
        'early detection degraded: the lost-write signal is unavailable, the time rule decides',
        'no history for the lost-write signal',
      );
    },
  };
}
