// force-drift under hostile HTTP input. Valid action data names AGs that do not exist (their
// namespaces are never used by any test), so no input may cause any write at all.

import fc from 'fast-check';
import * as ev from '../../shared/core/events.js';
import { defineFuzzSuite } from './support/fuzz-suite.js';
import { eventType } from './support/arbitraries/http-request.js';

defineFuzzSuite({
  fn: 'force-drift',
  types: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(ev.ACTION_FORCE, ev.ACTION_CLEAR_TRACKING) },
    { weight: 1, arbitrary: fc.constant(ev.ACTION_STALLED) },
    { weight: 1, arbitrary: eventType() },
  ),
  allowedWrite: () => false,
});
