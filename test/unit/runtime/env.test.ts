import { describe, expect, it } from 'vitest';
import { loadPodConfig } from '../../support/pod-config.js';
import { DOCUMENTED_RECOVERY_DEFAULTS } from '../recovery-defaults.js';

describe('loadConfig', () => {
  it('gives the documented defaults for an empty environment', () => {
    const c = loadPodConfig({});
    expect(c).toMatchObject({
      port: 8080,
      logLevel: 'info',
      sinkUrl: undefined,
      installNamespace: 'source-watcher-recovery',
      alarm: {
        namespace: 'source-watcher-recovery',
        name: 'recovery-alarm',
        sinkBroker: 'default',
      },
      resyncPingSource: 'resync',
      kubeRequestTimeoutMs: 10000,
    });
    expect(c.recovery).toMatchObject(DOCUMENTED_RECOVERY_DEFAULTS);
  });

  it('prefers K_SINK (SinkBinding) over BROKER_URL', () => {
    expect(
      loadPodConfig({ K_SINK: 'http://broker.local/a', BROKER_URL: 'http://other/b' }).sinkUrl,
    ).toBe('http://broker.local/a');
    expect(loadPodConfig({ BROKER_URL: 'http://other/b' }).sinkUrl).toBe('http://other/b');
  });

  it.each([
    [{ K_SINK: 'http://a/', BROKER_URL: 'http://b/' }, 'K_SINK', 'http://a/'],
    [{ BROKER_URL: 'http://b/' }, 'BROKER_URL', 'http://b/'],
    [{ K_SINK: ' ', BROKER_URL: 'http://b/' }, 'BROKER_URL', 'http://b/'],
    [{}, undefined, undefined],
  ])('names where the sink came from: %o -> %s', (env, from, url) => {
    const config = loadPodConfig(env);
    expect(config.sinkFrom).toBe(from);
    expect(config.sinkUrl).toBe(url);
  });

  it.each([
    ['PORT', '0', /PORT="0"/],
    ['PORT', 'http', /PORT="http"/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL="loud"/],
    ['K_SINK', 'not a url', /K_SINK="not a url"/],
    ['BROKER_URL', 'ftp://x', /BROKER_URL="ftp:\/\/x"/],
    ['ALARM_NAME', 'Bad_Name', /ALARM_NAME="Bad_Name"/],
    ['KUBE_REQUEST_TIMEOUT_MS', '5', /KUBE_REQUEST_TIMEOUT_MS="5"/],
    ['RECOVERY_BACKOFF_MAX', '4x', /RECOVERY_BACKOFF_MAX/],
    ['RECOVERY_MODE', 'sometimes', /RECOVERY_MODE/],
  ])('fails fast on %s=%s with a message naming the variable', (key, value, pattern) => {
    expect(() => loadPodConfig({ [key]: value })).toThrow(pattern);
  });

  it('reports every problem at once', () => {
    let message = '';
    try {
      loadPodConfig({ PORT: 'x', RECOVERY_MAX_ATTEMPTS: '0' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/RECOVERY_MAX_ATTEMPTS/);
  });

  it.each<[string, Record<string, string>, string]>([
    ['POD_NAME (downward API) first', { POD_NAME: 'fd-1', HOSTNAME: 'h', K_REVISION: 'r' }, 'fd-1'],
    ['then HOSTNAME', { HOSTNAME: 'h', K_REVISION: 'r' }, 'h'],
    ['then K_REVISION', { K_REVISION: 'force-drift-00001' }, 'force-drift-00001'],
    ['else unknown', {}, 'unknown'],
    ['cleaned and cut to 128', { POD_NAME: `a b${'x'.repeat(200)}` }, `a-b${'x'.repeat(125)}`],
  ])('Event reportingInstance: %s', (_, env, expected) => {
    expect(loadPodConfig(env).events.reportingInstance).toBe(expected);
  });

  it.each<[string, string | undefined, number | RegExp]>([
    ['default: 150 s', undefined, 150_000],
    ['milliseconds', '5000', 5000],
    ['the smallest', '100', 100],
    ['the largest: 200 s, so the sweep ends inside detect 300 s timeout', '200000', 200_000],
    ['below 100', '99', /SWEEP_BUDGET_MS="99"/],
    ['above 200 s', '200001', /SWEEP_BUDGET_MS="200001"/],
    ['a duration string', '150s', /SWEEP_BUDGET_MS="150s": expected milliseconds/],
    ['negative', '-5', /SWEEP_BUDGET_MS/],
  ])('SWEEP_BUDGET_MS %s', (_, value, expected) => {
    const env = value === undefined ? {} : { SWEEP_BUDGET_MS: value };
    if (typeof expected === 'number') expect(loadPodConfig(env).sweepBudgetMs).toBe(expected);
    else expect(() => loadPodConfig(env)).toThrow(expected);
  });

  it('Event writes have their own deadline, 2 s by default', () => {
    expect(loadPodConfig({}).events.writeTimeoutMs).toBe(2000);
    expect(loadPodConfig({ EVENT_WRITE_TIMEOUT_MS: '500' }).events.writeTimeoutMs).toBe(500);
    expect(() => loadPodConfig({ EVENT_WRITE_TIMEOUT_MS: '10' })).toThrow(/EVENT_WRITE_TIMEOUT_MS/);
  });

  it.each<[string, Record<string, string>, number | RegExp]>([
    ["default: detect's and surface-stalled's 300 s, less the 10 s margin", {}, 290_000],
    ["force-drift's 60 s", { DELIVERY_TIMEOUT_SECONDS: '60' }, 50_000],
    ['the smallest: 15 s', { DELIVERY_TIMEOUT_SECONDS: '15' }, 5_000],
    ['below 15 s', { DELIVERY_TIMEOUT_SECONDS: '14' }, /DELIVERY_TIMEOUT_SECONDS="14"/],
    ['above an hour', { DELIVERY_TIMEOUT_SECONDS: '3601' }, /DELIVERY_TIMEOUT_SECONDS="3601"/],
    ['a duration string', { DELIVERY_TIMEOUT_SECONDS: '60s' }, /expected whole seconds/],
  ])('DELIVERY_TIMEOUT_SECONDS %s (ADR 57)', (_, env, expected) => {
    if (typeof expected === 'number') expect(loadPodConfig(env).deliveryDeadlineMs).toBe(expected);
    else expect(() => loadPodConfig(env)).toThrow(expected);
  });

  it.each<[string, Record<string, string>, number | RegExp]>([
    ['default: 500 (ADR 27)', {}, 500],
    ['a small page', { SWEEP_PAGE_SIZE: '2' }, 2],
    ['zero', { SWEEP_PAGE_SIZE: '0' }, /SWEEP_PAGE_SIZE="0"/],
    ['above 5000', { SWEEP_PAGE_SIZE: '5001' }, /SWEEP_PAGE_SIZE="5001"/],
  ])('SWEEP_PAGE_SIZE %s', (_, env, expected) => {
    if (typeof expected === 'number') expect(loadPodConfig(env).sweepPageSize).toBe(expected);
    else expect(() => loadPodConfig(env)).toThrow(expected);
  });
});
