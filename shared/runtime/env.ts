// The one place that reads process.env. It validates everything once at start-up and fails fast
// with a message that names the variable and the accepted form.

import {
  ConfigError,
  parsePackageSourceAgNamespaces,
  parseRecoveryConfig,
  type RecoveryConfig,
} from '../core/config/recovery-config.js';
import type { PackageSourceOwnerRule } from '../core/packagesource/owner.js';
import { isDns1123Label } from '../core/codecs/names.js';
import { parseSenderAuthConfig, type SenderAuthConfig } from '../core/access/sender-auth.js';
import { parseMetricsExport, type MetricsExportConfig } from './metrics-config.js';
import { isHttpUrl } from './http-url.js';
import { readFileSync } from 'node:fs';
import { readSettings } from '../core/config/check.js';

/** The settings loadConfig reads by their rules (the RECOVERY_* ones: parseRecoveryConfig). */
const ENV_RULE_KEYS = [
  'LOG_LEVEL',
  'ALARM_NAME',
  'ALARM_SINK_BROKER',
  'RESYNC_PINGSOURCE',
  'KUBE_REQUEST_TIMEOUT_MS',
  'SWEEP_BUDGET_MS',
  'SWEEP_PAGE_SIZE',
  'DELIVERY_TIMEOUT_SECONDS',
  'EVENT_WRITE_TIMEOUT_MS',
  'RECOVERY_HEAL_EXTERNAL_ARTIFACTS',
  'RECOVERY_NAMESPACES',
] as const;

export interface FunctionConfig {
  readonly port: number;
  readonly logLevel: LogLevel;
  readonly recovery: RecoveryConfig;
  /** Explicit kubeconfig path; otherwise KUBECONFIG, ~/.kube/config or in-cluster. */
  readonly kubeconfigPath: string | undefined;
  /**
   * The namespace the function runs in, which is the install namespace (docs/adr/0063):
   * POD_NAMESPACE when set, else the pod's ServiceAccount namespace file. No default: nothing in
   * the code or the ConfigMap names it.
   */
  readonly installNamespace: string;
  /** Where detect posts action events: K_SINK (the SinkBinding's), else BROKER_URL (outside Knative). */
  readonly sinkUrl: string | undefined;
  /** Which variable sinkUrl came from; undefined when neither is set. */
  readonly sinkFrom: 'K_SINK' | 'BROKER_URL' | undefined;
  /** The follow-up alarm PingSource that detect programs (in the install namespace). */
  readonly alarm: {
    readonly namespace: string;
    readonly name: string;
    readonly sinkBroker: string;
  };
  /** Name of the resync PingSource (its events mean "sweep"). */
  readonly resyncPingSource: string;
  /** Per-request timeout against the Kubernetes API. */
  readonly kubeRequestTimeoutMs: number;
  /**
   * detect's sweep starts no API call or emit after this long (functions/detect/sweep.ts): with
   * the alarm's own calls it ends well inside the Service's 300 s timeoutSeconds, however slow
   * the API server is.
   */
  readonly sweepBudgetMs: number;
  /** AGs per LIST page of detect's sweep (SWEEP_PAGE_SIZE; ADR 27 measured 500). */
  readonly sweepPageSize: number;
  /**
   * Each delivery's deadline: the Service's timeoutSeconds (DELIVERY_TIMEOUT_SECONDS) minus
   * DELIVERY_MARGIN_MS. Past it the handler's calls are cut and it answers 503 (docs/adr/0057).
   */
  readonly deliveryDeadlineMs: number;
  /** Kubernetes Events of the recovery steps (docs/adr/0033). */
  readonly events: {
    /** reportingInstance: POD_NAME, else HOSTNAME (the pod's name in a Knative pod), else K_REVISION. */
    readonly reportingInstance: string;
    /** Deadline of each Event request; Events are best effort. */
    readonly writeTimeoutMs: number;
  };
  /** heal-external-artifacts (docs/adr/0038): RECOVERY_HEAL_EXTERNAL_ARTIFACTS on|off. */
  readonly heal: {
    readonly enabled: boolean;
  };
  /**
   * Which AGs can be a PackageSource's (docs/adr/0053): RECOVERY_PACKAGESOURCE_AG_NAMESPACES, the
   * namespaces Cozystack's PackageSource controller creates its AGs in (default cozy-system).
   */
  readonly packageSourceOwners: PackageSourceOwnerRule;
  /** Sender authentication (docs/adr/0056): RECOVERY_AUTH, RECOVERY_AUTH_AUDIENCE, RECOVERY_AUTH_SENDERS. */
  readonly auth: SenderAuthConfig;
  /** OTLP metrics export from the standard OTEL_* variables; undefined: none (docs/adr/0059). */
  readonly metricsExport: MetricsExportConfig | undefined;
  /**
   * RECOVERY_NAMESPACES (comma-separated; knative/overlays/scoped, docs/adr/0055): the only
   * namespaces detect's sweep lists, one by one. Absent: every namespace, in one list.
   */
  readonly namespaces?: readonly string[];
}

/** SWEEP_BUDGET_MS's default: 150 s of calls, + one call in flight + the alarm's, < 300 s. */
export const DEFAULT_SWEEP_BUDGET_MS = 150_000;

/** SWEEP_PAGE_SIZE's default (docs/adr/0027). */
export const DEFAULT_SWEEP_PAGE_SIZE = 500;
/** DELIVERY_TIMEOUT_SECONDS's default: detect's and surface-stalled's Service timeoutSeconds. */
export const DEFAULT_DELIVERY_TIMEOUT_SECONDS = 300;
/** The deadline ends this long before the Service's timeout: time to answer 503 and unwind. */
export const DELIVERY_MARGIN_MS = 10_000;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Reads the process environment. Only this module touches process.env. */
export function processEnv(): Readonly<Record<string, string | undefined>> {
  return process.env;
}

/** Where Kubernetes mounts the namespace of a pod's ServiceAccount, which is the pod's namespace. */
export const SERVICE_ACCOUNT_NAMESPACE_FILE =
  '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The namespace file's text, or undefined when there is none (not in a pod). */
export function readServiceAccountNamespace(): string | undefined {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE_FILE, 'utf8');
  } catch {
    return undefined;
  }
}

export function loadConfig(
  env: Readonly<Record<string, string | undefined>> = processEnv(),
  namespaceFile: () => string | undefined = readServiceAccountNamespace,
): FunctionConfig {
  const errors: string[] = [];
  const text = (key: string): string | undefined => {
    const v = env[key];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };

  let recovery: RecoveryConfig | undefined;
  try {
    recovery = parseRecoveryConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) errors.push(...e.problems);
    else errors.push(e instanceof Error ? e.message : String(e));
  }

  const portText = text('PORT') ?? '8080';
  const port = Number(portText);
  if (!/^[0-9]{1,5}$/.test(portText) || port < 1 || port > 65535) {
    errors.push(`PORT="${portText}": expected a TCP port number from 1 to 65535`);
  }

  // Every setting of recovery-config with a rule (shared/core/config/rules.ts) is read by it: the
  // same values, and the same messages, as the admission policy on the ConfigMap.
  const settings = readSettings(env, ENV_RULE_KEYS);
  errors.push(...settings.problems);
  const setting = <T>(key: string, fallback: T): T => (settings.values.get(key) as T) ?? fallback;
  const levelText = setting<LogLevel>('LOG_LEVEL', 'info');

  const sinkFrom =
    text('K_SINK') !== undefined
      ? ('K_SINK' as const)
      : text('BROKER_URL') !== undefined
        ? ('BROKER_URL' as const)
        : undefined;
  const sinkUrl = sinkFrom !== undefined ? text(sinkFrom) : undefined;
  if (sinkUrl !== undefined && !isHttpUrl(sinkUrl)) {
    errors.push(`${sinkFrom}="${sinkUrl}": expected an http(s) URL`);
  }

  // The install namespace is where the function runs (docs/adr/0063): the downward API's
  // POD_NAMESPACE when a platform sets it, else the ServiceAccount namespace Kubernetes mounts in
  // every pod (Knative Serving allows no fieldRef by default, so the file is the usual source).
  const namespaceFrom = text('POD_NAMESPACE') !== undefined ? 'POD_NAMESPACE' : 'file';
  const installNamespace = (text('POD_NAMESPACE') ?? namespaceFile() ?? '').trim();
  if (installNamespace === '') {
    errors.push(
      `the install namespace is unknown: set POD_NAMESPACE, or run in a pod (${SERVICE_ACCOUNT_NAMESPACE_FILE})`,
    );
  } else if (!isDns1123Label(installNamespace)) {
    errors.push(
      `${namespaceFrom === 'file' ? SERVICE_ACCOUNT_NAMESPACE_FILE : 'POD_NAMESPACE'}="${String(installNamespace).slice(0, 80)}": expected a namespace name (DNS-1123 label)`,
    );
  }
  const alarmNamespace = installNamespace;
  const alarmName = setting('ALARM_NAME', '');
  const sinkBroker = setting('ALARM_SINK_BROKER', '');
  const resyncPingSource = setting('RESYNC_PINGSOURCE', '');
  const kubeRequestTimeoutMs = setting('KUBE_REQUEST_TIMEOUT_MS', 0);
  const sweepBudgetMs = setting('SWEEP_BUDGET_MS', 0);
  const sweepPageSize = setting('SWEEP_PAGE_SIZE', 0);
  const deliveryTimeoutSeconds = setting('DELIVERY_TIMEOUT_SECONDS', 0);
  const eventWriteTimeoutMs = setting('EVENT_WRITE_TIMEOUT_MS', 0);
  const reportingInstance = reportingInstanceOf(
    text('POD_NAME') ?? text('HOSTNAME') ?? text('K_REVISION') ?? 'unknown',
  );

  const healText = setting('RECOVERY_HEAL_EXTERNAL_ARTIFACTS', 'on');

  let agNamespaces: readonly string[] | undefined;
  try {
    agNamespaces = parsePackageSourceAgNamespaces(env);
  } catch (e) {
    if (e instanceof ConfigError) errors.push(...e.problems);
    else throw e;
  }

  // The install namespace qualifies the bare sender names (the audience names none, ADR 68).
  const auth = parseSenderAuthConfig(env, alarmNamespace);
  errors.push(...auth.problems);

  const metricsExport = parseMetricsExport(env, errors);

  const namespaces = settings.values.get('RECOVERY_NAMESPACES') as readonly string[] | undefined;

  if (errors.length > 0 || recovery === undefined || agNamespaces === undefined) {
    throw new ConfigError(errors);
  }
  return {
    port,
    logLevel: levelText,
    recovery,
    kubeconfigPath: text('KUBECONFIG'),
    installNamespace,
    sinkUrl,
    sinkFrom,
    alarm: { namespace: alarmNamespace, name: alarmName, sinkBroker },
    resyncPingSource,
    kubeRequestTimeoutMs,
    sweepBudgetMs,
    sweepPageSize,
    deliveryDeadlineMs: deliveryTimeoutSeconds * 1000 - DELIVERY_MARGIN_MS,
    events: { reportingInstance, writeTimeoutMs: eventWriteTimeoutMs },
    heal: { enabled: healText === 'on' },
    packageSourceOwners: { agNamespaces },
    auth: auth.config,
    metricsExport,
    ...(namespaces !== undefined ? { namespaces } : {}),
  };
}

/** The API server takes at most 128 characters; keep it printable and short. */
function reportingInstanceOf(value: string): string {
  const clean = value.replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 128);
  return clean === '' ? 'unknown' : clean;
}
