// The Knative emulation for end-to-end tests, one door: createKnativeEmulation (emulation.ts) and
// the parts it assembles, for the tests of a single part.

export { ApiServerSource, AG_RESOURCE, EA_RESOURCE } from './apiserver-source.js';
export type { ApiServerSourceOptions, SourceSendRecord } from './apiserver-source.js';
export { Broker, BROKER_TTL, isRedeliverable, retryDelayMs } from './broker.js';
export type * from './broker-types.js';
export type { EmuClock } from './clock.js';
export type { AnyEvent } from './cloudevent-http.js';
export { CronError, nextFire, parseSchedule } from './cron.js';
export type { CronSchedule } from './cron.js';
export { startEventRecorder } from './event-recorder.js';
export type { EventRecorder, RecordedRequest, RecorderAnswer } from './event-recorder.js';
export { loadKnativeManifests } from './manifests.js';
export type { DeliverySpec, Destination, KnativeManifests, TriggerSpec } from './manifests.js';
export { makePingEvent, pingEventSource, PingScheduler } from './ping-scheduler.js';
export type {
  PingFireRecord,
  PingRejection,
  PingSchedulerOptions,
  ScheduledPing,
} from './ping-scheduler.js';

export { checkApiServerSourceAccess } from './access-check.js';
export type { ApiServerSourceAccessCheck } from './access-check.js';
export { BROKER_NAME, createKnativeEmulation, RECOVERY_NAMESPACE } from './emulation.js';
export type {
  BrokerTuning,
  IdleOptions,
  KnativeEmulation,
  KnativeEmulationOptions,
} from './emulation.js';
export {
  OidcTokenProvider,
  TOKEN_SECONDS,
  type OidcSender,
  type OidcTokenSource,
} from './oidc-tokens.js';
export {
  brokerAudience,
  knativeChildName,
  oidcServiceAccountName,
  oidcSubject,
} from './oidc-identity.js';
