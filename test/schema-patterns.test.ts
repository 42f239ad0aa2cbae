/**
 * Patterns in a bazaar extension's JSON Schema come from anyone who pays (or only verifies), and
 * used to run on JavaScript's backtracking RegExp on the serving thread: `^` + `a?`×27 + `a`×27 +
 * `$` against 256 `a`s held serve 36 s (issue 37). They run on RE2 now, with ECMA-262's meaning,
 * and every check spends from one step budget. The family at every length the pattern limit
 * allows answers in milliseconds with the right verdict; what RE2 cannot run is refused with a
 * reason; what would cost too much stops at the budget. (The family climbs from n = 1: on the old
 * engine each `a?` doubles the time, so the test fails near n = 19 instead of hanging.)
 */
import { describe, expect, test } from "vitest";
import { discover } from "../src/bazaar/bazaar.js";
import { SCHEMA_STEP_LIMIT, validateJsonSchema } from "../src/bazaar/json-schema.js";

const resource = { url: "https://shop.example/q" };
/** A bazaar extension whose `info.input.q` must match `pattern`. */
const declaring = (pattern: string, q: string) => ({
  bazaar: {
    info: { input: { type: "http", method: "GET", q } },
    schema: {
      properties: { input: { properties: { q: { type: "string", pattern } } } },
    },
  },
});
const family = (n: number) => `^${"a?".repeat(n)}${"a".repeat(n)}$`;
/** Every n whose pattern fits the 200-character limit. */
const LONGEST = Math.floor((200 - 2) / 3);

describe("the family ^(a?)^n a^n $ from the issue", () => {
  test(`n = 1 to ${LONGEST}, against 256 characters: each answers under 50 ms, with the right verdict`, () => {
    expect(family(LONGEST).length).toBeLessThanOrEqual(200);
    discover(resource, declaring(family(1), "a")); // loads the engine
    for (let n = 1; n <= LONGEST; n++) {
      // The best of five, as test machines are shared: the first compiles the pattern, the
      // others find it compiled. The old engine took as long at every try.
      let took = Number.POSITIVE_INFINITY;
      let found: ReturnType<typeof discover>;
      for (let attempt = 0; attempt < 5 && took >= 50; attempt++) {
        const started = performance.now();
        found = discover(resource, declaring(family(n), "a".repeat(256)));
        took = Math.min(took, performance.now() - started);
      }
      expect(took, `n = ${n}`).toBeLessThan(50);
      // Catalogued or not, never a hang: 256 characters are more than 2n, so no match.
      expect(found?.ok).toBe(false);
      expect(found && !found.ok && found.reason).toContain("must match the pattern");
      // Between n and 2n characters it matches, as ECMA-262 says.
      for (const length of [n, 2 * n]) {
        expect(discover(resource, declaring(family(n), "a".repeat(length)))?.ok).toBe(true);
      }
      expect(discover(resource, declaring(family(n), "a".repeat(n - 1)))?.ok).toBe(false);
    }
  });
});

describe("patterns keep their JSON Schema meaning (ECMA-262, Unicode, unanchored)", () => {
  // Where RE2's own reading differs (`.`, `\s`, `\u`, `[^]`), or where the old shape checks
  // refused a safe pattern (three long repeats, a repeated group that alternates).
  const cases: [string, string[]][] = [
    ["^\\d+\\.\\d+\\.\\d+$", ["1.2.3", "1.2", "10.20.30x"]],
    ["^(?:[a-z]+-)+[a-z]+$", ["a-b-c", "a--b", "abc"]],
    ["^(a+)+$", ["aaaa", "aaaaaaaaaaaa!"]],
    ["^a.c$", ["abc", "a\nc", "a\u2028c", "a😀c"]],
    ["^\\s+$", [" \u00a0\ufeff\u3000", "\u0085", "\v"]],
    ["^[^\\s]+$", ["ab", "a b", "a\u00a0b"]],
    ["^[\\S]+$", ["ab", "a b", "😀"]],
    ["^\\u0041\\u{1F600}\\uD83D\\uDE00$", ["A😀😀", "A😀"]],
    ["^[^]$", ["a", "\n", ""]],
    ["^[]?$", ["", "a"]],
    ["^[[]$", ["[", "a"]],
    ["^\\p{Script=Greek}+$", ["αβ", "ab"]],
    ["^\\p{L}+$", ["héllo", "a1"]],
    ["^(?<year>\\d{4})-\\d{2}$", ["2024-05", "24-05"]],
    ["a$", ["a\n", "ba"]],
    ["[\\b]", ["\b", "b"]],
    ["\\bfoo\\b", ["a foo b", "afoob"]],
    ["b", ["abc", "xyz"]],
    ["^0x[0-9a-fA-F]{64}$", [`0x${"ab".repeat(32)}`, `0x${"ab".repeat(31)}`]],
  ];
  test("each verdict is RegExp's, including patterns the old shape checks refused", () => {
    for (const [pattern, values] of cases) {
      for (const value of values) {
        const verdict = validateJsonSchema({ type: "string", pattern }, value);
        expect(verdict, `${pattern} on ${JSON.stringify(value)}`).toEqual(
          new RegExp(pattern, "u").test(value)
            ? { valid: true }
            : { valid: false, errors: [expect.stringContaining("must match the pattern")] },
        );
      }
    }
  });
});

describe("what no linear-time engine runs, or would cost too much, is refused with a reason", () => {
  const refused: [string, string][] = [
    ["(a)\\1", "refers back to a group, which no linear-time engine runs"],
    ["(?<x>a)\\k<x>", "refers back to a group"],
    ["a(?=b)", "uses a lookaround, which no linear-time engine runs"],
    ["(?<!a)b", "uses a lookaround"],
    ["^.{0,300}$", "would compile to more than 500 RE2 instructions"],
    ["a{1001}", "would compile to more than 500 RE2 instructions"],
    ["\\p{Letter}", "is not supported by the linear-time engine (RE2)"],
  ];
  test("backreferences, lookarounds, big programs, what RE2 does not know: nothing is run", () => {
    for (const [pattern, reason] of refused) {
      const found = discover(resource, declaring(pattern, "ab"));
      expect(found?.ok, pattern).toBe(false);
      expect(found && !found.ok && found.reason).toContain("schema is not usable");
      expect(found && !found.ok && found.reason).toContain(reason);
    }
  });
});

describe(`one step budget (${SCHEMA_STEP_LIMIT}) counts visits, pattern runs and compiles`, () => {
  test("strings tested against a big pattern stop at the budget, not at the end", () => {
    // About 500 instructions × 257 per string: the eighth string is over the budget.
    const pattern = "\\w{250}\\w{245}";
    const schema = { type: "array", items: { type: "string", pattern } };
    const value = Array.from({ length: 60 }, () => "b".repeat(256));
    const started = performance.now();
    const verdict = validateJsonSchema(schema, value);
    expect(verdict).toEqual({ valid: false, unusable: expect.stringContaining("steps") });
    expect(performance.now() - started).toBeLessThan(1_000);
    // Seven strings fit.
    expect(validateJsonSchema(schema, value.slice(0, 7))).toMatchObject({ valid: false });
    expect(validateJsonSchema(schema, value.slice(0, 7))).not.toHaveProperty("unusable");
  });

  test("compiling many big patterns is paid for: the schema is refused before most are compiled", () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 200; i++) {
      properties[`p${i}`] = { type: "string", pattern: `^x${i}.{0,240}$` };
    }
    const started = performance.now();
    const verdict = validateJsonSchema({ properties }, {});
    expect(verdict).toEqual({ valid: false, unusable: expect.stringContaining("steps") });
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
