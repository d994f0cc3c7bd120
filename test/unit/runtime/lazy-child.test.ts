import { describe, expect, it } from 'vitest';
import { createLogger, lazyChild } from '../../../shared/runtime/logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    name: 't',
    level,
    destination: {
      write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>),
    },
  });
  return { logger, lines };
}

describe('lazyChild', () => {
  it('writes enabled lines with the bindings, like a child', () => {
    const { logger, lines } = capture('info');
    lazyChild(logger, { ceId: 'e1' }).info({ decision: 'force' }, 'action emitted');
    expect(lines).toEqual([
      expect.objectContaining({
        ceId: 'e1',
        decision: 'force',
        msg: 'action emitted',
        level: 'info',
      }),
    ]);
  });

  it('writes nothing for a disabled level', () => {
    const { logger, lines } = capture('info');
    lazyChild(logger, { ceId: 'e1' }).debug({ x: 1 }, 'nothing to do');
    expect(lines).toEqual([]);
  });

  it('nests: a child of the lazy child carries both bindings', () => {
    const { logger, lines } = capture('debug');
    lazyChild(logger, { ceId: 'e1' }).child({ name: 'ag' }).debug({}, 'nothing to do');
    expect(lines).toEqual([expect.objectContaining({ ceId: 'e1', name: 'ag', level: 'debug' })]);
  });

  it('redacts like the parent', () => {
    const { logger, lines } = capture('info');
    lazyChild(logger, { ceId: 'e1' }).warn({ token: 'SECRET' }, 'x');
    expect(JSON.stringify(lines)).not.toContain('SECRET');
  });
});
