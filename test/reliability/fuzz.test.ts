// Every function under hostile HTTP input: one row per function, naming what differs (the event
// types its inputs claim and the writes it may make for an input it answered 2xx). The rest is the
// same for every row (support/fuzz-suite.ts): 2xx or 4xx for every input, no write for an invalid
// one, no unhandled rejection, a flat heap.

import fc from 'fast-check';
import * as ev from '../../shared/core/objects/cloudevent-types.js';
import {
  defineFuzzSuite,
  mostlyHandledTypes,
  NO_WRITE,
  type FuzzRow,
} from './support/fuzz-suite.js';
import { eventType } from './support/arbitraries/http-request.js';

const FUNCTIONS: readonly FuzzRow[] = [
  // Its only legitimate writes are to its follow-up alarm PingSource (a valid AG in its grace
  // period arms it; a sweep settles it).
  {
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
  },
  // Valid action data names AGs that do not exist (their namespaces are never used by any test),
  // so no input may cause any write at all.
  {
    fn: 'force-drift',
    types: mostlyHandledTypes([ev.ACTION_FORCE, ev.ACTION_CLEAR_TRACKING], ev.ACTION_STALLED),
    allowedWrite: NO_WRITE,
  },
  // No AG named by any input exists (and the cluster's AGs are deleted first), so no input may
  // cause any write at all.
  {
    fn: 'heal-external-artifacts',
    types: mostlyHandledTypes([ev.APISERVER_UPDATE, ev.APISERVER_DELETE], ev.APISERVER_ADD),
    allowedWrite: NO_WRITE,
  },
  // AG and action data name AGs that do not exist; only a resync ping may write, and only
  // PackageSource status (the cluster starts empty, so it has none).
  {
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
  },
];

for (const row of FUNCTIONS) defineFuzzSuite(row);
