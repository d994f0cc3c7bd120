// The ValidatingAdmissionPolicy on recovery-config, built from the rules table (rules.ts):
// the same checks as check.ts, written in CEL, and the loader's own message for each bad
// value (docs/adr/0064). test/generate/config-policy.ts writes it to
// knative/components/admission-policy/policy-config.yaml; a unit test checks the file is current.

import { CONFIG_ORDER_RULES, CONFIG_RULES, SHOWN_MAX, ruleOf, type SettingRule } from './rules.js';
import { DURATION_SHAPE, INTEGER_SHAPE } from './check.js';
import { parseDuration } from '../codecs/duration.js';

export const CONFIG_POLICY_NAME = 'source-watcher-recovery-config';
/** The label the generated recovery-config carries (knative/base/kustomization.yaml). */
export const CONFIG_LABEL = 'source-watcher-recovery.cozystack.io/config';
/** The label of the install's Namespace (knative/base/namespace.yaml). */
export const INSTALL_LABEL = 'source-watcher-recovery.cozystack.io/install';

const LABEL_SHAPE = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** One segment of a duration, as parseDuration reads it (leftmost unit first: ms before m). */
const SEGMENT = '([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)';
const UNIT_MS =
  "{'ns': 0.000001, 'us': 0.001, 'µs': 0.001, 'μs': 0.001, 'ms': 1.0, 's': 1000.0, " +
  "'m': 60000.0, 'h': 3600000.0}";
/** Longest value CEL looks at (parseDuration refuses longer ones too). */
const MAX_CHECKED = 256;

/** A CEL string literal (raw, single-quoted: no escapes inside). */
const lit = (s: string): string => {
  if (s.includes("'")) throw new Error(`CEL literal with a quote: ${s}`);
  return `r'${s}'`;
};
const dbl = (n: number): string => (Number.isInteger(n) ? `${n}.0` : String(n));

/** The CEL variable holding a key's trimmed value: RECOVERY_GRACE_PERIOD -> recoveryGracePeriod. */
export function variableOf(key: string): string {
  return key.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** CEL for the value as shownValue shows it. */
function shown(v: string): string {
  const flat = `${v}.replace('\\r', ' ').replace('\\n', ' ')`;
  return `(${flat}.size() > ${SHOWN_MAX} ? ${flat}.substring(0, ${SHOWN_MAX}) + '…' : ${flat})`;
}

/** CEL for a duration's milliseconds (doubles: never an overflow error). */
function durationMs(v: string): string {
  return (
    `(${v} == '0' ? 0.0 : ${v}.findAll(${lit(SEGMENT)})` +
    `.map(s, double(s.find(r'^[0-9.]+')) * ${UNIT_MS}[s.find(r'[a-zµμ]+$')]).sum())`
  );
}

/** CEL that is true when v (non-empty, trimmed) is a good value of rule. */
function goodValue(rule: SettingRule, v: string): string {
  switch (rule.kind) {
    case 'duration':
      return (
        `${v}.size() <= ${MAX_CHECKED} && ${v}.matches(${lit(DURATION_SHAPE)}) && ` +
        `${durationMs(v)} >= ${dbl(rule.minMs)} && ${durationMs(v)} <= ${dbl(rule.maxMs)}`
      );
    case 'integer':
      return (
        `${v}.matches(${lit(INTEGER_SHAPE)}) && ` +
        `int(${v}) >= ${rule.min} && int(${v}) <= ${rule.max}`
      );
    case 'enum':
      return `${v}.lowerAscii() in [${rule.values.map((x) => `'${x}'`).join(', ')}]`;
    case 'name':
      return `${v}.size() <= 63 && ${v}.matches(${lit(LABEL_SHAPE)})`;
    case 'namespaces':
      return (
        `${v}.size() <= ${MAX_CHECKED * 16} && ${v}.split(',').size() <= ${rule.maxItems} && ` +
        `${v}.split(',').all(e, e.trim().size() <= 63 && e.trim().matches(${lit(LABEL_SHAPE)}))`
      );
  }
}

interface Validation {
  expression: string;
  messageExpression: string;
  reason: 'Invalid';
}

function validationOf(rule: SettingRule): Validation {
  const v = `variables.${variableOf(rule.key)}`;
  return {
    expression: `${v} == '' || (${goodValue(rule, v)})`,
    messageExpression: `'${rule.key}="' + ${shown(v)} + '": expected ${rule.expected}'`,
    reason: 'Invalid',
  };
}

function orderValidationOf(longer: string, shorter: string): Validation {
  const part = (key: string) => {
    const rule = ruleOf(key);
    const v = `variables.${variableOf(key)}`;
    const dflt = rule.default ?? '';
    return {
      ok: `(${v} == '' || (${goodValue(rule, v)}))`,
      ms: `(${v} == '' ? ${dbl(parseDuration(dflt))} : ${durationMs(v)})`,
      raw: shown(`(${v} == '' ? '${dflt}' : ${v})`),
    };
  };
  const l = part(longer);
  const s = part(shorter);
  return {
    expression: `!(${l.ok} && ${s.ok}) || ${l.ms} >= ${s.ms}`,
    messageExpression:
      `'${longer}="' + ${l.raw} + '": expected a duration not shorter than ${shorter} (' + ` +
      `${s.raw} + ')'`,
    reason: 'Invalid',
  };
}

/** The policy and its binding, as objects ready to be written as YAML. */
export function configPolicyObjects(): readonly Record<string, unknown>[] {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: CONFIG_POLICY_NAME },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['configmaps'],
            operations: ['CREATE', 'UPDATE'],
          },
        ],
        objectSelector: { matchLabels: { [CONFIG_LABEL]: 'recovery' } },
      },
      variables: CONFIG_RULES.map((r) => ({
        name: variableOf(r.key),
        expression: `object.?data[?'${r.key}'].orValue('').trim()`,
      })),
      validations: [
        ...CONFIG_RULES.map(validationOf),
        ...CONFIG_ORDER_RULES.map((o) => orderValidationOf(o.longer, o.shorter)),
      ],
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: CONFIG_POLICY_NAME },
    spec: {
      policyName: CONFIG_POLICY_NAME,
      validationActions: ['Deny'],
      // Only the install's own Namespace (its label moves with the install, docs/adr/0063).
      matchResources: { namespaceSelector: { matchLabels: { [INSTALL_LABEL]: 'true' } } },
    },
  };
  return [policy, binding];
}
