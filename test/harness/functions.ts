// The functions room, its one door: the five functions under test, in this process (their own
// createApp(deps) with the product's adapter, served by the product's listen() on 127.0.0.1) or
// as child processes (node dist/functions/NAME/main.js). Every suite, the benches and `npm start`
// start them from here.

export {
  API_FUNCTION_NAMES,
  buildFunctionApp,
  FUNCTION_NAMES,
  functionKubeClient,
  type ApiFunctionName,
  type AppDeps,
  type FunctionName,
} from './functions/apps.js';
export { serve, type Served } from './functions/serve.js';
export { countedApiWaits, type ApiWaits } from './functions/api-waits.js';
export {
  BENCH_FUNCTIONS,
  closeAll,
  startAsDeployed,
  startFunction,
  startFunctions,
  urlOf,
  type FunctionReplica,
  type RunningFunction,
  type StartFunctionOptions,
  type StartFunctionsOptions,
} from './functions/start.js';
export { commonDeps, SettableClock, testConfig, type CommonDeps } from './functions/test-deps.js';
export { builtMain, distIsStale, ensureBuilt } from './functions/build.js';
export { runNode, type NodeRun } from './functions/run-node.js';
export {
  freePort,
  killAllServers,
  postOnce,
  spawnFunction,
  spawnServer,
  timeToFirstAnswer,
  withFirstAnswer,
  type Answer,
  type ChildExit,
  type ChildFunction,
  type LogLine,
} from './functions/child.js';
