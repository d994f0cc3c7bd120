import { createBrokerEmitter, missingSinkEmitter } from '../../shared/runtime/broker-emitter.js';
import { runMain } from '../../shared/runtime/main.js';
import { fileTokenSource } from '../../shared/runtime/sink-token.js';
import { createApp } from './app.js';
import { createAlarmFollowUps } from './alarm.js';

await runMain('detect', ({ config, logger, kube, clock, isReady, metrics, senderAuth }) => {
  // First install: a Revision may start before the SinkBinding has injected K_SINK. Then readiness
  // fails, so Knative sends this Revision no traffic, and the SinkBinding's K_SINK rolls the next
  // one (docs/adr/0024, 0063: nothing in recovery-config names the Broker's address, which names
  // the namespace). BROKER_URL is for running detect outside Knative.
  switch (config.sinkFrom) {
    case 'K_SINK':
      logger.info({ sink: config.sinkUrl, from: 'K_SINK' }, 'action events go to K_SINK');
      break;
    case 'BROKER_URL':
      logger.warn(
        { sink: config.sinkUrl, from: 'BROKER_URL' },
        'K_SINK is not set (not bound by a SinkBinding): action events go to BROKER_URL',
      );
      break;
    case undefined:
      logger.error(
        {},
        'no sink for action events: neither K_SINK (SinkBinding) nor BROKER_URL is set; readiness fails until one is',
      );
      break;
  }
  // RECOVERY_AUTH=oidc: the SinkBinding's token goes with every action event (docs/adr/0056).
  const tokenFile = config.auth.sinkTokenFile;
  const bearer =
    tokenFile !== undefined ? { bearer: fileTokenSource({ path: tokenFile, logger }) } : {};
  const emitter =
    config.sinkUrl !== undefined
      ? createBrokerEmitter({ url: config.sinkUrl, ...bearer })
      : missingSinkEmitter();
  const followUps = createAlarmFollowUps({ kube, clock, config });
  const sinkKnown = config.sinkUrl !== undefined;
  return createApp(
    { kube, clock, logger, config, emitter, followUps, metrics },
    { isReady: () => isReady() && sinkKnown, senderAuth },
  );
});
