/** An untrusted schema's `pattern` runs on RE2 (linear time), never on RegExp, where `^a?…a?a…a$`
 * held the event loop 36 s; ECMA-262 meaning kept, charged to the caller's step budget. */
import { RE2JS } from "re2js";

/** Longest pattern accepted. */
const PATTERN_LIMIT = 200;
/** Longest string a pattern is run on; a longer one makes the check unusable, not a match. */
export const PATTERN_INPUT_LIMIT = 256;
/** Most RE2 instructions per pattern (`^.{0,240}$` is ~490): compile time grows faster than that. */
export const PROGRAM_LIMIT = 500;
/** Steps charged per RE2 instruction compiled (a step: one instruction run over one character). */
const COMPILE_COST = 150;
/** Instructions a `\p{…}` counts for. */
const PROPERTY_WEIGHT = 16;

/** A pattern compiled for RE2, with the steps a string costs per character. */
export interface LinearPattern {
  readonly re: RE2JS;
  /** Its size (RE2 instructions, a Unicode property counting PROPERTY_WEIGHT): steps per character. */
  readonly cost: number;
}

// ECMA-262's \s (WhiteSpace and LineTerminator) and the line terminators `.` does not match.
const SPACE: readonly (readonly [number, number])[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const hex = (c: number) => `\\x{${c.toString(16)}}`;
const ranges = (list: readonly (readonly [number, number])[]) =>
  list.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join("");
const complement = (list: readonly (readonly [number, number])[]) => {
  const out: [number, number][] = [];
  let next = 0;
  for (const [a, b] of list) {
    if (a > next) out.push([next, a - 1]);
    next = b + 1;
  }
  out.push([next, 0x10ffff]);
  return out;
};
const S = ranges(SPACE);
const NOT_S = ranges(complement(SPACE));
const DOT = `[^${ranges([
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
])}]`;
const ALL = `\\x{0}-\\x{10ffff}`;

const QUANTIFIER = /^(?:[*+?]|\{(\d+)(,(\d*))?\})\??/;
const UNICODE_ESCAPE = /^\\u(?:\{([0-9a-fA-F]+)\}|([0-9a-fA-F]{4}))/;
// `\p{Script=Greek}` is RE2's `\p{Greek}`; long names (`\p{Letter}`) RE2 does not know: refused.
const PROPERTY = /^\\([pP])\{(?:(?:Script|sc|General_Category|gc)=)?([A-Za-z_]+)\}/;

/** Why `source` is not run, or its RE2 form (ECMA-262 matches) and weighted size bound. */
function translate(source: string): { source: string; estimate: number } | string {
  if (source.length > PATTERN_LIMIT) return `is longer than ${PATTERN_LIMIT} characters`;
  try {
    new RegExp(source, "u");
  } catch {
    return "is not a valid regular expression";
  }
  let out = "";
  // Sizes in RE2 instructions, per open group: what it holds, and its last atom's (quantifiers).
  const frames = [{ total: 0, last: 0 }];
  const top = () => frames[frames.length - 1] as { total: number; last: number };
  const atom = (size: number) => {
    top().total += size;
    top().last = size;
  };
  let inClass = false;
  for (let i = 0; i < source.length; ) {
    const rest = source.slice(i);
    const c = source[i] as string;
    if (c === "\\") {
      const written = escaped(rest, inClass);
      if (!Array.isArray(written)) return written.problem;
      out += written[0];
      i += written[1];
      // A Unicode property is hundreds of ranges, copied at each repeat and searched per step.
      const weight = /^\\[pP]/.test(rest) ? PROPERTY_WEIGHT : 1;
      if (!inClass) atom(weight);
      else {
        top().total += weight - 1;
        top().last += weight - 1;
      }
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      // A `[` in a class is a character in ECMA-262; RE2 would read `[:alpha:]`.
      out += c === "[" ? "\\[" : c;
      i += 1;
      continue;
    }
    if (c === "[") {
      const empty = /^\[(\^?)\]/.exec(rest);
      if (empty) {
        // `[]` matches nothing, `[^]` anything: RE2 has neither.
        out += `[${empty[1] === "^" ? "" : "^"}${ALL}]`;
        i += empty[0].length;
      } else {
        inClass = true;
        out += rest.startsWith("[^") ? "[^" : "[";
        i += rest.startsWith("[^") ? 2 : 1;
      }
      atom(1);
      continue;
    }
    const quantifier = QUANTIFIER.exec(rest);
    if (quantifier) {
      const [text, min, comma, max] = quantifier;
      const s = top().last;
      let grown = s + 1;
      if (min !== undefined) {
        const low = Number(min);
        grown =
          comma === undefined
            ? s * low
            : max === ""
              ? s * (low + 1) + 1
              : s * Number(max) + Number(max) - low;
      }
      top().total += grown - s;
      top().last = grown;
      out += text;
      i += text.length;
      continue;
    }
    if (c === "(") {
      if (/^\(\?(?:=|!|<=|<!)/.test(rest))
        return "uses a lookaround, which no linear-time engine runs";
      // Group names do not change what matches; RE2 spells them otherwise.
      const open = /^\((?:\?:|\?<[^>]*>)?/.exec(rest)?.[0] ?? "(";
      out += open === "(?:" ? "(?:" : "(";
      i += open.length;
      frames.push({ total: 0, last: 0 });
      continue;
    }
    if (c === ")") {
      const inner = (frames.pop() as { total: number }).total;
      atom(inner + 2);
    } else if (c === "|") {
      top().total += 1;
      top().last = 0;
    } else atom(1);
    out += c === "." ? DOT : c;
    i += 1;
  }
  // In a group: RE2 would otherwise analyse a pattern that starts with `^` for its one-pass
  // engine, which took 100 ms for `^\p{L}{0,240}$` (the group changes no match).
  return { source: `(${out})`, estimate: top().total + 4 };
}

/** One escape: its RE2 text and length in `rest`, or why it is refused. */
function escaped(rest: string, inClass: boolean): [string, number] | { problem: string } {
  const next = rest[1] ?? "";
  if (/[1-9k]/.test(next)) {
    return { problem: "refers back to a group, which no linear-time engine runs" };
  }
  if (next === "s" || next === "S") {
    const set = next === "s" ? S : NOT_S;
    return [inClass ? set : `[${set}]`, 2];
  }
  if (next === "u") {
    const unicode = UNICODE_ESCAPE.exec(rest);
    if (!unicode) return [rest.slice(0, 2), 2];
    let code = Number.parseInt((unicode[1] ?? unicode[2]) as string, 16);
    let length = unicode[0].length;
    // In Unicode mode a surrogate pair written as two escapes is one code point.
    const low = /^\\u(d[c-f][0-9a-f]{2})/i.exec(rest.slice(length));
    if (unicode[2] && code >= 0xd800 && code <= 0xdbff && low) {
      code = 0x10000 + ((code - 0xd800) << 10) + (Number.parseInt(low[1] as string, 16) - 0xdc00);
      length += 6;
    }
    return [hex(code), length];
  }
  if (next === "c" && /^\\c[A-Za-z]/.test(rest)) {
    return [hex((rest.charCodeAt(2) as number) % 32), 3];
  }
  if (next === "0") return [hex(0), 2];
  if (next === "b" && inClass) return [hex(8), 2];
  const property = PROPERTY.exec(rest);
  if (property) return [`\\${property[1]}{${property[2]}}`, property[0].length];
  return [rest.slice(0, 2), 2];
}

// Patterns compiled lately, newest last, with the RE2 instructions they hold in all: a seller's
// schema comes back with each payment. Bounded by instructions, as core/newest.ts bounds by count.
const compiled = new Map<string, LinearPattern>();
let compiledInstructions = 0;
const REMEMBERED_INSTRUCTIONS = 50_000;

/** `source` compiled for RE2 (charged to `spend`; memoised ones are free), or why it is refused. */
export function linearPattern(
  source: string,
  spend: (steps: number) => void,
): LinearPattern | string {
  const known = compiled.get(source);
  if (known) {
    compiled.delete(source);
    compiled.set(source, known);
    return known;
  }
  const translated = translate(source);
  if (typeof translated === "string") return translated;
  if (translated.estimate > PROGRAM_LIMIT) return TOO_BIG;
  spend(translated.estimate * COMPILE_COST);
  let re: RE2JS;
  try {
    re = RE2JS.compile(translated.source);
  } catch (error) {
    const why = error instanceof Error ? error.message.replace(/^error parsing regexp: /, "") : "";
    return `is not supported by the linear-time engine (RE2): ${why}`;
  }
  if (re.programSize() > PROGRAM_LIMIT) return TOO_BIG;
  const pattern = { re, cost: Math.max(re.programSize(), translated.estimate) };
  compiled.set(source, pattern);
  compiledInstructions += pattern.cost;
  for (const [old, { cost }] of compiled) {
    if (compiledInstructions <= REMEMBERED_INSTRUCTIONS) break;
    compiled.delete(old);
    compiledInstructions -= cost;
  }
  return pattern;
}

/** Whether `pattern` matches somewhere in `value` (JSON Schema patterns are not anchored). */
export function searches(pattern: LinearPattern, value: string): boolean {
  // The matcher's search is linear and keeps nothing; test() would grow an 8 MB DFA per pattern.
  return pattern.re.matcher(value).find();
}

const TOO_BIG = `would compile to more than ${PROGRAM_LIMIT} RE2 instructions`;
