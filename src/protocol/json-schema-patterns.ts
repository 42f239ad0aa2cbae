/**
 * A JSON Schema `pattern` from an untrusted schema is a regular expression run by a backtracking
 * engine on the event loop: `(a+)+$` on 30 characters takes seconds. Only patterns that cannot
 * backtrack without end are run, on short strings:
 * - no backreferences and no lookarounds;
 * - no repeated group that itself repeats or alternates (`(a+)+`, `(a|ab)*`): exponential time;
 * - at most two long repeats (`*`, `+`, `{n,}`, or more than 16), so the worst case is quadratic
 *   in the string's length, and the strings tested are bounded (PATTERN_INPUT_LIMIT).
 * A schema with any other pattern is refused, with this reason, before anything is run.
 */

/** Longest pattern accepted. */
const PATTERN_LIMIT = 200;
/** Longest string a pattern is run on; a longer one makes the check unusable, not a match. */
export const PATTERN_INPUT_LIMIT = 256;
/** Most long repeats in one pattern. */
const LONG_REPEATS = 2;
/** A bounded repeat counts as long above this many. */
const LONG = 16;

interface Group {
  repeats: boolean;
  alternates: boolean;
}

const QUANTIFIER = /^(?:[*+?]|\{(\d+)(,(\d*))?\})/;

/** Why `source` is not run here, or undefined when it may be. */
export function patternProblem(source: string): string | undefined {
  if (source.length > PATTERN_LIMIT) return `is longer than ${PATTERN_LIMIT} characters`;
  try {
    new RegExp(source, "u");
  } catch {
    return "is not a valid regular expression";
  }
  const frames: Group[] = [{ repeats: false, alternates: false }];
  const top = () => frames[frames.length - 1] as Group;
  /** The group that ended right before, when the last atom was a group. */
  let closed: Group | undefined;
  let long = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string;
    const quantifier = QUANTIFIER.exec(source.slice(i));
    if (quantifier) {
      const [text, min, comma, max] = quantifier;
      const most =
        text === "?"
          ? 1
          : text === "*" || text === "+" || (comma !== undefined && max === "")
            ? Number.POSITIVE_INFINITY
            : Number(max ?? min);
      if (most > 1 && closed && (closed.repeats || closed.alternates)) {
        return "repeats a group that itself repeats or alternates (it can take exponential time)";
      }
      if (most > LONG) long += 1;
      top().repeats = true;
      i += text.length - 1;
      // A lazy or possessive-looking suffix.
      if (source[i + 1] === "?") i += 1;
      closed = undefined;
      continue;
    }
    closed = undefined;
    if (c === "\\") {
      const next = source[i + 1] ?? "";
      if (/[1-9k]/.test(next)) return "refers back to a group (it can take exponential time)";
      // \p{…}, \P{…}, \u{…}: the braces are the escape's, not a repeat.
      if (/[pPu]/.test(next) && source[i + 2] === "{") {
        const end = source.indexOf("}", i);
        i = end < 0 ? source.length : end;
      } else {
        i += 1;
      }
      continue;
    }
    if (c === "[") {
      i = classEnd(source, i);
      continue;
    }
    if (c === "(") {
      if (/^\(\?(?:=|!|<=|<!)/.test(source.slice(i))) return "uses a lookaround";
      frames.push({ repeats: false, alternates: false });
      if (source.startsWith("(?:", i)) i += 2;
      else if (source.startsWith("(?<", i)) i = Math.max(i, source.indexOf(">", i));
      continue;
    }
    if (c === ")") {
      const group = frames.length > 1 ? (frames.pop() as Group) : top();
      top().repeats ||= group.repeats;
      top().alternates ||= group.alternates;
      closed = group;
      continue;
    }
    if (c === "|") top().alternates = true;
  }
  if (long > LONG_REPEATS) return `repeats without a small bound more than ${LONG_REPEATS} times`;
  return undefined;
}

/** The index of the `]` that ends the class opened at `start`. */
function classEnd(source: string, start: number): number {
  for (let i = start + 1; i < source.length; i++) {
    if (source[i] === "\\") i += 1;
    else if (source[i] === "]") return i;
  }
  return source.length;
}

export type SafePattern = RegExp;

/** The pattern as ajv compiles it (Unicode mode). Call only when patternProblem found none. */
export function safePattern(source: string): SafePattern {
  return new RegExp(source, "u");
}
