// Collects the functions' pino JSON lines in memory (and optionally forwards them), so scenarios
// can assert what was reported, e.g. observe mode's "would force".

import type { pino } from 'pino';

export interface LogRecord {
  readonly level: string;
  readonly function: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export class LogCapture implements pino.DestinationStream {
  readonly records: LogRecord[] = [];
  readonly #forward: ((line: string) => void) | undefined;

  constructor(forward?: (line: string) => void) {
    this.#forward = forward;
  }

  write(line: string): void {
    this.#forward?.(line);
    try {
      this.records.push(JSON.parse(line) as LogRecord);
    } catch {
      this.records.push({ level: 'unparsed', function: '', msg: line });
    }
  }

  /** Records with this message, optionally from one function. */
  find(msg: string, fn?: string): LogRecord[] {
    return this.records.filter((r) => r.msg === msg && (fn === undefined || r.function === fn));
  }
}
