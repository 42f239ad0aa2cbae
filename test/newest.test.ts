/**
 * setNewest is the one bounded memory of the project's memos (checksummed addresses, Host
 * verdicts, domain separators, contract assets, channel ids, token accounts, gas estimates): the
 * bound holds whatever keys a caller sends, and what is used again stays.
 */
import { describe, expect, test } from "vitest";
import { setNewest } from "../src/core/newest.js";

describe("setNewest", () => {
  test("keeps at most the bound, forgetting the oldest first", () => {
    const map = new Map<number, string>();
    for (let i = 0; i < 10_000; i++) setNewest(map, i, `v${i}`, 100);
    expect(map.size).toBe(100);
    expect([...map.keys()]).toEqual(Array.from({ length: 100 }, (_, i) => 9_900 + i));
  });

  test("a key set again becomes the newest, and its value is replaced", () => {
    const map = new Map<string, number>();
    setNewest(map, "a", 1, 2);
    setNewest(map, "b", 2, 2);
    setNewest(map, "a", 3, 2);
    setNewest(map, "c", 4, 2);
    expect([...map.entries()]).toEqual([
      ["a", 3],
      ["c", 4],
    ]);
  });
});
