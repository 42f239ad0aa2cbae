/**
 * BudgetMap bounds a map by its entries' estimated bytes: long keys take more of the budget than
 * short ones, the oldest go first, a key set again is the newest, and a delete gives its bytes
 * back. The estimates are held to what V8 really uses in test/memory-payers.test.ts.
 */
import { describe, expect, test } from "vitest";
import { BudgetMap, stringBytes } from "../src/core/byte-budget.js";

const sized = (budget: number) => new BudgetMap<string, number>(budget, (key) => stringBytes(key));

describe("BudgetMap", () => {
  test("keeps the newest entries that fit the budget, whatever their count", () => {
    const short = sized(100_000);
    for (let i = 0; i < 10_000; i++) short.set(`k${i}`, i);
    const long = sized(100_000);
    for (let i = 0; i < 10_000; i++) long.set(`k${i}${"x".repeat(1000)}`, i);
    expect(short.bytes).toBeLessThanOrEqual(100_000);
    expect(long.bytes).toBeLessThanOrEqual(100_000);
    // Keys a thousand characters long: about a tenth as many fit.
    expect(long.size * 8).toBeLessThan(short.size);
    expect([...long.values()].at(-1)).toBe(9_999);
    expect([...long.values()][0]).toBe(10_000 - long.size);
  });

  test("a key set again is the newest; a delete gives its bytes back", () => {
    const map = sized(3 * (96 + stringBytes("a")));
    map.set("a", 1).set("b", 2).set("c", 3);
    map.set("a", 4);
    map.set("d", 5);
    expect([...map.entries()]).toEqual([
      ["c", 3],
      ["a", 4],
      ["d", 5],
    ]);
    const before = map.bytes;
    map.delete("c");
    expect(map.bytes).toBe(before - (96 + stringBytes("c")));
    map.clear();
    expect(map.bytes).toBe(0);
  });
});
