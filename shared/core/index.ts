// The pure decision core: everything the functions need to decide, with time passed in.

export * from './types.js';
export * from './events.js';
export * from './duration.js';
export * from './time.js';
export * from './config.js';
export * from './tracking.js';
export * from './conditions.js';
export * from './backoff.js';
export * from './stuck.js';
export * from './lost-write.js';
export * from './gate.js';
export * from './cycle.js';
export * from './decide.js';
export * from './force-plan.js';
export * from './packagesource.js';
export * from './next-check.js';
export * from './parse.js';
export * from './names.js';
export * from './plain.js';
export * from './alarm.js';
export * from './short-hash.js';
export * from './kube-event-content.js';
export * from './kube-event-series.js';
export * from './kube-event-steps.js';
export * from './external-artifacts.js';
export * from './resource-version.js';
