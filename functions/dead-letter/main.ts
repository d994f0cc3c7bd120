import { runMain } from '../../shared/runtime/main.js';
import { createApp } from './app.js';

await runMain('dead-letter', ({ logger, isReady }) => createApp({ logger }, { isReady }));
