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

/**
 * Posts with `post` (HTTP 200 each time) every 100 ms until the answer's result is `result`,
 * starting from `first` when given; throws after 10 s.
 */
export async function untilResult<A extends { readonly status: number; readonly body: unknown }>(
  what: string,
  result: string,
  post: () => Promise<A>,
  first?: A,
): Promise<A> {
  const deadline = Date.now() + 10_000;
  let answer = first ?? (await post());
  while (expectResult(what, answer) !== result) {
    if (Date.now() > deadline) {
      throw new Error(`${what}: never "${result}": ${JSON.stringify(answer.body)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
    answer = await post();
  }
  return answer;
}
