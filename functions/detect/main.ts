import { createBrokerEmitter, missingSinkEmitter } from '../../shared/runtime/broker-emitter.js';
import { runMain } from '../../shared/runtime/main.js';
import { createApp } from './app.js';
import { createAlarmFollowUps } from './alarm.js';

await runMain('detect', ({ config, logger, kube, clock, isReady }) => {
  if (config.sinkUrl === undefined)
    logger.warn({}, 'no broker configured: set K_SINK or BROKER_URL');
  const emitter =
    config.sinkUrl !== undefined
      ? createBrokerEmitter({ url: config.sinkUrl })
      : missingSinkEmitter();
  const followUps = createAlarmFollowUps({ kube, clock, config });
  return createApp({ kube, clock, logger, config, emitter, followUps }, { isReady });
});
