// Helm conditions over the chart's flags: the expression that is true exactly for a set of
// combinations (Settings). The chart's templates compute the flags once per file into `$f`
// (templates/_helpers.tpl, "swr.flags").

import { FLAGS, type Flag, type Settings } from './variants.js';

const keyOf = (s: Settings, flags: readonly Flag[] = FLAGS): string =>
  flags.map((f) => (s[f] ? '1' : '0')).join('');

const literal = (flag: Flag, value: boolean): string => (value ? `$f.${flag}` : `(not $f.${flag})`);

/** The flags whose value decides membership in `members` (within `all`). */
function relevantFlags(members: readonly Settings[], all: readonly Settings[]): Flag[] {
  const inSet = new Set(members.map((s) => keyOf(s)));
  const known = new Set(all.map((s) => keyOf(s)));
  return FLAGS.filter((flag) =>
    members.some((s) => {
      const flipped = keyOf({ ...s, [flag]: !s[flag] });
      return known.has(flipped) && !inSet.has(flipped);
    }),
  );
}

/**
 * The expression for `members` out of `all` combinations; undefined when it holds for all of them.
 * A disjunction of conjunctions over the flags that matter (enough for four flags).
 */
export function conditionFor(
  members: readonly Settings[],
  all: readonly Settings[],
): string | undefined {
  if (members.length === all.length) return undefined;
  if (members.length === 0) throw new Error('conditionFor: no combination');
  const flags = relevantFlags(members, all);
  const terms = [...new Map(members.map((s) => [keyOf(s, flags), s])).values()].map((s) => {
    const literals = flags.map((f) => literal(f, s[f]));
    return literals.length === 1 ? (literals[0] as string) : `(and ${literals.join(' ')})`;
  });
  const expression = terms.length === 1 ? (terms[0] as string) : `(or ${terms.join(' ')})`;
  return expression.startsWith('(') ? expression.slice(1, -1) : expression;
}
