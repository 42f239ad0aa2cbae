/**
 * BudgetMap bounds a map by its entries' estimated bytes: long keys take more of the budget than
 * short ones, the oldest go first, a key set again is the newest, and a delete gives its bytes
 * back; a count bound too, with each entry forgotten told. The journal's settlements in memory
 * forget only what the journal lets go (never one still followed). The estimates are held to
 * what V8 really uses in test/memory-payers.test.ts.
 */
import { describe, expect, test } from "vitest";
import { BudgetMap, stringBytes } from "../src/core/byte-budget.js";
import type { EntryState, JournalEntry } from "../src/core/store.js";
import { EntriesInMemory, entryBytes } from "../src/store/journal-memory.js";

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

  test("a count bound too, and each entry forgotten for a bound is told", () => {
    const forgotten: [string, number][] = [];
    const map = new BudgetMap<string, number>(1_000_000, (key) => stringBytes(key), {
      maxEntries: 3,
      onForget: (key, value) => forgotten.push([key, value]),
    });
    for (let i = 0; i < 6; i++) map.set(`k${i}`, i);
    map.delete("k5");
    expect([...map.keys()]).toEqual(["k3", "k4"]);
    // A delete is not a forgetting.
    expect(forgotten).toEqual([
      ["k0", 0],
      ["k1", 1],
      ["k2", 2],
    ]);
  });
});

describe("the journal's settlements in memory", () => {
  const entry = (i: number, state: EntryState): JournalEntry => ({
    key: `eip3009:8453:0xtoken:0xpayer${i}:0x${"ab".repeat(32)}`,
    network: "eip155:8453",
    signer: "0x00000000000000000000000000000000000000a1",
    txNonce: i,
    expect: { token: "0xtoken", from: `0xpayer${i}`, to: "0xpayee", value: "1000" },
    hashes: [`0x${i.toString(16).padStart(64, "0")}`],
    raws: state === "broadcast" ? [`0x${"02".repeat(200)}`] : [],
    state,
    updatedAt: i,
  });

  test("past their bytes, the oldest the journal lets go are forgotten, down to 90%; the others stay", () => {
    const one = entryBytes(entry(0, "answered"));
    const entries = new EntriesInMemory(1_000_000, 100 * one);
    for (let i = 0; i < 300; i++) {
      entries.set(`k${i}`, entry(i, i % 10 === 0 ? "broadcast" : "answered"));
      entries.forget((_, e) => e.state !== "broadcast");
    }
    expect(entries.bytes).toBeLessThanOrEqual(100 * one);
    // Every one still followed is kept, however old.
    for (let i = 0; i < 300; i += 10) expect(entries.get(`k${i}`)?.state).toBe("broadcast");
    expect(entries.has("k299")).toBe(true);
    expect(entries.has("k1")).toBe(false);
    // An entry that changes in place is counted again.
    const before = entries.bytes;
    const followed = entries.get("k0") as JournalEntry;
    followed.raws = [];
    entries.resized("k0");
    expect(entries.bytes).toBeLessThan(before);
  });

  test("followed settlements past the budget stay; once settled, they go as new ones come", () => {
    const one = entryBytes(entry(0, "answered"));
    const entries = new EntriesInMemory(1_000_000, 50 * one);
    const mayForget = (_: string, e: JournalEntry) => e.state !== "broadcast";
    for (let i = 0; i < 100; i++) {
      entries.set(`k${i}`, entry(i, "broadcast"));
      entries.forget(mayForget);
    }
    expect(entries.size).toBe(100);
    for (let i = 0; i < 100; i++) {
      const settled = entries.get(`k${i}`) as JournalEntry;
      settled.state = "answered";
      settled.raws = [];
      entries.resized(`k${i}`);
    }
    for (let i = 100; i < 105; i++) {
      entries.set(`k${i}`, entry(i, "answered"));
      entries.forget(mayForget);
    }
    expect(entries.bytes).toBeLessThanOrEqual(50 * one);
    expect(entries.has("k104")).toBe(true);
    expect(entries.has("k0")).toBe(false);
  });
});
