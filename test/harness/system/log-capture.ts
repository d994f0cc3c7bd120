// Collects the functions' pino JSON lines in memory (and optionally forwards them), so scenarios
// can assert what was reported, e.g. observe mode's "would force".

import type { pino } from 'pino';

export interface LogRecord {
  readonly level: string;
  readonly function: string;
  readonly msg: string;
  /** The system's clock when the line was written (virtual epoch ms), when it has one. */
  readonly virtualAt?: number;
  readonly [field: string]: unknown;
}

export interface LogCaptureOptions {
  /** Keep only the lines with one of these messages (the rest are forwarded, not parsed). */
  keep?: readonly string[];
  /** Stamps each kept record with `virtualAt`. */
  now?: () => number;
}

export class LogCapture implements pino.DestinationStream {
  readonly records: LogRecord[] = [];
  readonly #forward: ((line: string) => void) | undefined;
  readonly #keep: readonly string[] | undefined;
  readonly #now: (() => number) | undefined;

  constructor(forward?: (line: string) => void, opts: LogCaptureOptions = {}) {
    this.#forward = forward;
    this.#keep = opts.keep?.map((m) => `"msg":${JSON.stringify(m)}`);
    this.#now = opts.now;
  }

  write(line: string): void {
    this.#forward?.(line);
    if (this.#keep !== undefined && !this.#keep.some((m) => line.includes(m))) return;
    try {
      const record = JSON.parse(line) as LogRecord;
      this.records.push(this.#now === undefined ? record : { ...record, virtualAt: this.#now() });
    } catch {
      this.records.push({ level: 'unparsed', function: '', msg: line });
    }
  }

  /** Records with this message, optionally from one function. */
  find(msg: string, fn?: string): LogRecord[] {
    return this.records.filter((r) => r.msg === msg && (fn === undefined || r.function === fn));
  }
}
