// surface-stalled under hostile HTTP input. AG and action data name AGs that do not exist; only a
// resync ping may write, and only PackageSource status (the cluster starts empty, so it has none).

import fc from 'fast-check';
import * as ev from '../../shared/core/objects/cloudevent-types.js';
import { defineFuzzSuite } from './support/fuzz-suite.js';
import { eventType } from './support/arbitraries/http-request.js';

defineFuzzSuite({
  fn: 'surface-stalled',
  types: fc.oneof(
    { weight: 25, arbitrary: fc.constantFrom(ev.APISERVER_ADD, ev.APISERVER_UPDATE) },
    { weight: 25, arbitrary: fc.constant(ev.ACTION_STALLED) },
    { weight: 10, arbitrary: fc.constantFrom(ev.APISERVER_REF_ADD, ev.APISERVER_REF_UPDATE) },
    { weight: 5, arbitrary: eventType() },
    { weight: 2, arbitrary: fc.constant(ev.PING) },
  ),
  allowedWrite: (call, req) =>
    req.eventType === ev.PING &&
    call.resource === 'packagesources' &&
    call.subresource === 'status',
});
