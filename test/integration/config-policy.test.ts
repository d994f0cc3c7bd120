// The admission policy on recovery-config (knative/components/admission-policy/policy-config.yaml,
// generated from shared/core/config/rules.ts, docs/adr/0064) and the functions' loader agree, on
// the real kube-apiserver where the global setup installed the policy: each bad value of the
// shared table is refused by both with the same line, each good one admitted by both. The writes
// are dry-run creates (nothing is stored) of a ConfigMap labelled as the generated one is.

import { describe, expect, it } from 'vitest';
import { CONFIG_LABEL, CONFIG_POLICY_NAME, shownValue } from '../../shared/core/index.js';
import { asImpersonated } from '../setup/admission-policy.js';
import { testKubeConfig } from '../support/apiserver.js';
import { BAD_VALUES, GOOD_VALUES, badLine } from '../support/config-values.js';
import { RECOVERY_NAMESPACE, findRecoveryConfig, renderKustomize } from '../support/manifests.js';
import { loadPodConfig } from '../support/pod-config.js';

const admin = testKubeConfig();

/** A dry-run create of a ConfigMap with `data` in `namespace`; the status and the message. */
async function apply(
  data: Record<string, string>,
  opts: { labelled?: boolean; namespace?: string } = {},
): Promise<{ status: number; message: string }> {
  const answer = await asImpersonated(admin, 'config-editor', {
    method: 'POST',
    path: `/api/v1/namespaces/${opts.namespace ?? RECOVERY_NAMESPACE}/configmaps`,
    query: 'dryRun=All',
    body: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `recovery-config-${Math.random().toString(36).slice(2, 12)}`,
        labels: opts.labelled === false ? {} : { [CONFIG_LABEL]: 'recovery' },
      },
      data,
    },
  });
  const body = JSON.parse(answer.body) as { message?: string };
  return { status: answer.status, message: body.message ?? '' };
}

/** The loader's problems for env (none: []). */
function loaderProblems(env: Record<string, string>): readonly string[] {
  try {
    loadPodConfig(env);
    return [];
  } catch (e) {
    return (e as { problems?: readonly string[] }).problems ?? [String(e)];
  }
}

const DENIED = `ValidatingAdmissionPolicy '${CONFIG_POLICY_NAME}' with binding '${CONFIG_POLICY_NAME}' denied request: `;

describe('recovery-config: the policy and the loader agree', () => {
  it.each(BAD_VALUES)('%s=%j: both refuse it with the same line', async (key, value, expected) => {
    const line = badLine(key, shownValue(value), expected);
    expect(loaderProblems({ [key]: value })).toEqual([line]);
    const answer = await apply({ [key]: value });
    expect(answer.status).toBe(422);
    expect(answer.message).toContain(`${DENIED}${line}`);
    expect(answer.message.endsWith(line)).toBe(true);
  });

  it.each(GOOD_VALUES)('%s=%j: both accept it', async (key, value) => {
    expect(loaderProblems({ [key]: value })).toEqual([]);
    expect(await apply({ [key]: value })).toEqual({ status: 201, message: '' });
  });

  it.each<[Record<string, string>, string]>([
    [
      { RECOVERY_BACKOFF_MAX: '10s' },
      'RECOVERY_BACKOFF_MAX="10s": expected a duration not shorter than RECOVERY_BACKOFF_INITIAL (30s)',
    ],
    [
      { RECOVERY_BACKOFF_INITIAL: '5m', RECOVERY_BACKOFF_MAX: ' 4m ' },
      'RECOVERY_BACKOFF_MAX="4m": expected a duration not shorter than RECOVERY_BACKOFF_INITIAL (5m)',
    ],
  ])('%j: the order of the backoffs, refused by both with the same line', async (data, line) => {
    expect(loaderProblems(data)).toEqual([line]);
    const answer = await apply(data);
    expect(answer.status).toBe(422);
    expect(answer.message).toContain(`${DENIED}${line}`);
  });

  it('both accept the two backoffs equal', async () => {
    const data = { RECOVERY_BACKOFF_INITIAL: '1m', RECOVERY_BACKOFF_MAX: '60s' };
    expect(loaderProblems(data)).toEqual([]);
    expect((await apply(data)).status).toBe(201);
  });

  it.each(['knative', 'knative/overlays/observe', 'knative/overlays/scoped'])(
    'the shipped %s recovery-config is admitted and loads',
    async (render) => {
      const data = findRecoveryConfig(renderKustomize(render)).data;
      expect(loaderProblems(data)).toEqual([]);
      expect((await apply(data)).status).toBe(201);
    },
  );

  it.each(['ALARM_NAME', 'RECOVERY_GRACE_PERIOD', 'RECOVERY_MODE', 'RECOVERY_NAMESPACES'])(
    'a 200 kB %s: both refuse it with the same cut line (within CEL cost limits)',
    async (key) => {
      const value = `${'a'.repeat(100_000)}\n${'b'.repeat(100_000)}`;
      const [line] = loaderProblems({ [key]: value });
      expect(line).toMatch(new RegExp(`^${key}="a{64}…": expected `));
      const answer = await apply({ [key]: value });
      expect(answer.status).toBe(422);
      expect(answer.message).toContain(`${DENIED}${line ?? ''}`);
    },
  );

  it('judges only the labelled ConfigMap of the install namespace', async () => {
    const bad = { RECOVERY_GRACE_PERIOD: '30x' };
    expect((await apply(bad, { labelled: false })).status).toBe(201);
    expect((await apply(bad, { namespace: 'default' })).status).toBe(201);
    expect((await apply(bad)).status).toBe(422);
  });
});
