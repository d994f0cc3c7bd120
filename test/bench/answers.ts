// What the benches read in a function's answer: the HTTP status and the `result` of its JSON body,
// whether the answer came over fetch (support/http-events.ts: the body parsed) or is a child
// process's (harness/functions: the body as text).

/** The `result` of the answer's JSON body ('' when there is none). */
export function resultOf(answer: { readonly body: unknown }): string {
  let body = answer.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return '';
    }
  }
  const result = (body as { result?: unknown } | null)?.result;
  return typeof result === 'string' ? result : '';
}

/** Throws unless the answer is HTTP 200 (with `result`, when given); returns its result. */
export function expectResult(
  what: string,
  answer: { readonly status: number; readonly body: unknown },
  result?: string,
): string {
  const got = resultOf(answer);
  if (answer.status !== 200 || (result !== undefined && got !== result)) {
    const expected = result === undefined ? '' : ` "${result}"`;
    throw new Error(
      `${what}: expected HTTP 200${expected}, got ${answer.status} ${JSON.stringify(answer.body)}`,
    );
  }
  return got;
}
