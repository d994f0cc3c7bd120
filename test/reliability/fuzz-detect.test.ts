// detect under hostile HTTP input. Its only legitimate writes are to its follow-up alarm
// PingSource (a valid AG in its grace period arms it; a sweep settles it).

import fc from 'fast-check';
import * as ev from '../../shared/core/objects/cloudevent-types.js';
import { defineFuzzSuite } from './support/fuzz-suite.js';
import { eventType } from './support/arbitraries/http-request.js';

defineFuzzSuite({
  fn: 'detect',
  types: fc.oneof(
    { weight: 30, arbitrary: fc.constantFrom(ev.APISERVER_ADD, ev.APISERVER_UPDATE) },
    { weight: 15, arbitrary: fc.constantFrom(ev.APISERVER_REF_ADD, ev.APISERVER_REF_UPDATE) },
    { weight: 5, arbitrary: fc.constantFrom(ev.APISERVER_DELETE, ev.APISERVER_REF_DELETE) },
    { weight: 5, arbitrary: fc.constantFrom(ev.ACTION_FORCE, ev.ACTION_STALLED) },
    { weight: 5, arbitrary: eventType() },
    { weight: 2, arbitrary: fc.constant(ev.PING) },
  ),
  allowedWrite: (call) => call.resource === 'pingsources',
});
