// The window in which detect does not emit an action again (docs/adr/0047). The Broker side (one
// force at the sink for a redelivered event) is proved on the real API server by
// test/integration/functions/detect.test.ts.

import { describe, expect, it } from 'vitest';
import { createRecentActions, REPEAT_WINDOW_MS } from '../../../functions/detect/recent-actions.js';

const AT = 1_000_000;

describe('recent actions', () => {
  it.each<[string, string, number, boolean]>([
    ['the same key at once: a repeat', 'k', AT, true],
    ['the same key just inside the window: a repeat', 'k', AT + REPEAT_WINDOW_MS - 1, true],
    ['the same key at the end of the window: no repeat', 'k', AT + REPEAT_WINDOW_MS, false],
    ['another key: no repeat', 'other', AT, false],
    ['a clock that went back: no repeat', 'k', AT - 1, false],
  ])('%s', (_label, key, now, repeats) => {
    const recent = createRecentActions();
    recent.emitted('k', AT);
    expect(recent.repeats(key, now)).toBe(repeats);
  });

  it('an action never emitted is no repeat', () => {
    expect(createRecentActions().repeats('k', AT)).toBe(false);
  });

  it('a later emit restarts the window', () => {
    const recent = createRecentActions();
    recent.emitted('k', AT);
    recent.emitted('k', AT + REPEAT_WINDOW_MS);
    expect(recent.repeats('k', AT + REPEAT_WINDOW_MS + 1)).toBe(true);
  });
});
