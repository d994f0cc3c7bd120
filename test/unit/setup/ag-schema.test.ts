// SWR_AG_SCHEMA chooses the ArtifactGenerator schema the test cluster serves (docs/adr/0066):
// source-watcher v2.1.0's by default, v2.3.1's on request; any other value stops the run.

import { describe, expect, it } from 'vitest';
import { agSchema, AG_SCHEMA_ENV } from '../../setup/install-crds.js';

describe('SWR_AG_SCHEMA', () => {
  it.each<[string | undefined, string]>([
    [undefined, 'v2.1'],
    ['', 'v2.1'],
    ['v2.1', 'v2.1'],
    ['v2.3', 'v2.3'],
  ])('%j serves %s', (value, schema) => {
    expect(agSchema({ [AG_SCHEMA_ENV]: value })).toBe(schema);
  });

  it.each(['2.3', 'V2.3', 'v2.2', 'latest'])('%j is refused with the accepted values', (value) => {
    expect(() => agSchema({ [AG_SCHEMA_ENV]: value })).toThrow(
      `SWR_AG_SCHEMA=${JSON.stringify(value)}: expected v2.1 or v2.3`,
    );
  });
});
