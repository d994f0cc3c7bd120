// heal-external-artifacts under hostile HTTP input. No AG named by any input exists (and the
// cluster's AGs are deleted first), so no input may cause any write at all.

import fc from 'fast-check';
import * as ev from '../../shared/core/events.js';
import { defineFuzzSuite } from './support/fuzz-suite.js';
import { eventType } from './support/arbitraries/http-request.js';

defineFuzzSuite({
  fn: 'heal-external-artifacts',
  types: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(ev.APISERVER_UPDATE, ev.APISERVER_DELETE) },
    { weight: 1, arbitrary: fc.constant(ev.APISERVER_ADD) },
    { weight: 1, arbitrary: eventType() },
  ),
  allowedWrite: () => false,
});
