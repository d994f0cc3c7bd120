// heal-external-artifacts under hostile HTTP input. No AG named by any input exists (and the
// cluster's AGs are deleted first), so no input may cause any write at all.

import * as ev from '../../shared/core/objects/cloudevent-types.js';
import { defineFuzzSuite, mostlyHandledTypes } from './support/fuzz-suite.js';

defineFuzzSuite({
  fn: 'heal-external-artifacts',
  types: mostlyHandledTypes([ev.APISERVER_UPDATE, ev.APISERVER_DELETE], ev.APISERVER_ADD),
  allowedWrite: () => false,
});
