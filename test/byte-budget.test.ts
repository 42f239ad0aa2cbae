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

  test("evicts in the order a plain Map keeps, through re-sets and deletes", () => {
    const size = (key: string) => 96 + stringBytes(key);
    const map = sized(50 * size("k000"));
    const model = new Map<string, number>();
    let bytes = 0;
    for (let i = 0; i < 5_000; i++) {
      const key = `k${String((i * 37) % 120).padStart(3, "0")}`;
      if (i % 11 === 0) {
        if (model.delete(key)) bytes -= size(key);
        map.delete(key);
        continue;
      }
      if (model.delete(key)) bytes -= size(key);
      model.set(key, i);
      bytes += size(key);
      for (const oldest of model.keys()) {
        if (bytes <= map.maxBytes || model.size <= 1) break;
        model.delete(oldest);
        bytes -= size(oldest);
      }
      map.set(key, i);
      expect([...map.entries()]).toEqual([...model.entries()]);
    }
    expect(map.bytes).toBe(bytes);
  });
});
