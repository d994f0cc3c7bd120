// force-drift under hostile HTTP input. Valid action data names AGs that do not exist (their
// namespaces are never used by any test), so no input may cause any write at all.

import * as ev from '../../shared/core/objects/cloudevent-types.js';
import { defineFuzzSuite, mostlyHandledTypes } from './support/fuzz-suite.js';

defineFuzzSuite({
  fn: 'force-drift',
  types: mostlyHandledTypes([ev.ACTION_FORCE, ev.ACTION_CLEAR_TRACKING], ev.ACTION_STALLED),
  allowedWrite: () => false,
});
