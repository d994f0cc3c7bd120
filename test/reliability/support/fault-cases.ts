// The faults of the matrix and how they are aimed at exactly one API call.

import type {
  CallMatch,
  FaultHandle,
  FaultPhase,
  FaultRule,
  KubeProxy,
} from '../../support/kube-proxy.js';

export type FaultLabel = '500' | '429' | '409' | 'timeout' | 'reset' | 'slow';
export const FAULT_LABELS: readonly FaultLabel[] = [
  '500',
  '429',
  '409',
  'timeout',
  'reset',
  'slow',
];

/** How long a 'slow' fault holds a call: well below every request timeout used. */
export const SLOW_MS = 250;
/** The adapter's request timeout in timeout cells (the product default is 10 s). */
export const SHORT_TIMEOUT_MS = 1000;
export const NORMAL_TIMEOUT_MS = 5000;

export interface FaultCase {
  readonly label: FaultLabel;
  /** before: the call never reaches the API server; after: it is applied, the answer is lost. */
  readonly phase: FaultPhase;
  /** Column key, e.g. "500", "500 after". */
  readonly key: string;
  rule(match: CallMatch): FaultRule;
}

function ruleFor(label: FaultLabel, phase: FaultPhase, match: CallMatch): FaultRule {
  switch (label) {
    case '500':
    case '429':
    case '409':
      return { match, kind: 'status', status: Number(label), phase, times: 1 };
    case 'timeout':
      return { match, kind: 'timeout', phase, times: 1 };
    case 'reset':
      return { match, kind: 'reset', phase, times: 1 };
    case 'slow':
      return { match, kind: 'slow', delayMs: SLOW_MS, times: 1 };
  }
}

/** Every fault for a read; for a write, the lost-answer ('after') variants too. */
export function faultCases(write: boolean): FaultCase[] {
  const out: FaultCase[] = [];
  for (const label of FAULT_LABELS) {
    out.push({ label, phase: 'before', key: label, rule: (m) => ruleFor(label, 'before', m) });
  }
  if (write) {
    for (const label of FAULT_LABELS) {
      if (label === 'slow') continue;
      out.push({
        label,
        phase: 'after',
        key: `${label} after`,
        rule: (m) => ruleFor(label, 'after', m),
      });
    }
  }
  return out;
}

export const ALL_COLUMNS: readonly string[] = faultCases(true).map((f) => f.key);

/**
 * Applies `rule` to the nth call matching `match` (1-based): the first n-1 matching calls pass
 * through untouched (a zero-delay 'slow' rule that consumes them).
 */
export function addFaultOnNth(proxy: KubeProxy, nth: number, rule: FaultRule): FaultHandle[] {
  const handles: FaultHandle[] = [];
  if (nth > 1) {
    handles.push(
      proxy.addFault({
        kind: 'slow',
        delayMs: 0,
        times: nth - 1,
        ...(rule.match !== undefined ? { match: rule.match } : {}),
      }),
    );
  }
  handles.push(proxy.addFault(rule));
  return handles;
}

export function timeoutFor(fault: FaultCase): number {
  return fault.label === 'timeout' ? SHORT_TIMEOUT_MS : NORMAL_TIMEOUT_MS;
}
