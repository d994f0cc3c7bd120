// The install namespace comes from where the function runs (docs/adr/0063): POD_NAMESPACE, else
// the ServiceAccount namespace file of the pod; nothing defaults it, and ALARM_NAMESPACE (which
// recovery-config set before) is not read.

import { describe, expect, it } from 'vitest';
import { loadConfig, SERVICE_ACCOUNT_NAMESPACE_FILE } from '../../../shared/runtime/env.js';

const noFile = (): string | undefined => undefined;
const file = (text: string) => (): string | undefined => text;

describe('the install namespace', () => {
  it.each([
    ['POD_NAMESPACE', { POD_NAMESPACE: 'cozy-recovery' }, noFile, 'cozy-recovery'],
    ['the namespace file, as Kubernetes writes it', {}, file('cozy-recovery'), 'cozy-recovery'],
    ['the file with a trailing newline', {}, file('cozy-recovery\n'), 'cozy-recovery'],
    ['POD_NAMESPACE over the file', { POD_NAMESPACE: 'a' }, file('b'), 'a'],
    ['not ALARM_NAMESPACE', { ALARM_NAMESPACE: 'elsewhere' }, file('here'), 'here'],
  ])('%s', (_what, env, reader, expected) => {
    const config = loadConfig(env, reader);
    expect(config.installNamespace).toBe(expected);
    // The alarm lives in it; the audience the functions check does not name it (ADR 68).
    expect(config.alarm.namespace).toBe(expected);
    expect(loadConfig({ ...env, K_SERVICE: 'detect' }, reader).auth.audience).toBe(
      'source-watcher-recovery.cozystack.io/detect',
    );
  });

  it.each([
    ['neither', {}, noFile, /install namespace is unknown: set POD_NAMESPACE/],
    ['an empty file', {}, file('\n'), /install namespace is unknown/],
    ['a bad POD_NAMESPACE', { POD_NAMESPACE: 'Not_A_Name' }, noFile, /POD_NAMESPACE="Not_A_Name"/],
    ['a bad file', {}, file('a/b'), new RegExp(`${SERVICE_ACCOUNT_NAMESPACE_FILE}="a/b"`)],
  ])('%s: the function does not start, and says why', (_what, env, reader, message) => {
    expect(() => loadConfig(env, reader)).toThrow(message);
  });
});
